// The F16_2of4x16 gather kernel (packed_f16_2of4.h), compiled with the AVX-512 set and
// -ffp-contract=off: bit for bit the scalar reference.
//
// Per block of a group (16 rows x 32 weights, 576 bytes): one 64-byte load of the codes; per kept
// value k, the vpermps index of each lane is its 2-bit code with 4 (k / 2 % 4) above it (one
// shift and one vpternlogd, computed once per block for all tokens of the tile; vpermps reads the
// low 4 bits only). Per token and kept value: one vpermps of the block's 16 activations that
// group k / 2 lies in, one vcvtph2ps of the 16 rows' values and one FMA.
#include <immintrin.h>

#include <cstring>

#include "tessera/kernels/packed_f16_2of4.h"

namespace tessera::kernels {
namespace {

// 12 blocks ahead (6.9 KB), the dense F16x16 tile's distance in bytes (avx512_packed.cpp).
constexpr int kPrefetchBytes = 12 * 576;

template <int T>
void tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes, float* y,
          int64_t y_stride) {
  const __m512i three = _mm512_set1_epi32(3);
  __m512 acc[T], acc1[T];  // even and odd kept values (packed_f16_2of4.h)
  for (int t = 0; t < T; ++t) acc[t] = acc1[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* block = q + b * kF16_2of4x16BlockBytes;
    if (T <= 2) {
      for (int c = 0; c < 9; ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(block + kPrefetchBytes + c * 64), _MM_HINT_NTA);
      }
    }
    const __m512i codes = _mm512_loadu_si512(block + 512);
    __m512 x0[T], x1[T];
    for (int t = 0; t < T; ++t) {
      const float* xt = reinterpret_cast<const float*>(x + t * x_row_bytes) + b * 32;
      x0[t] = _mm512_loadu_ps(xt);
      x1[t] = _mm512_loadu_ps(xt + 16);
    }
    // Kept values two at a time (one group of four): the same base 4 (g % 4) for both.
    for (int g = 0; g < 8; ++g) {
      const __m512i base = _mm512_set1_epi32(4 * (g % 4));
      // (codes >> 2k & 3) | base: vpternlogd imm 0xEA = (A & B) | C.
      const __m512i i0 = _mm512_ternarylogic_epi32(_mm512_srli_epi32(codes, 4 * g), three, base, 0xEA);
      const __m512i i1 = _mm512_ternarylogic_epi32(_mm512_srli_epi32(codes, 4 * g + 2), three, base, 0xEA);
      const __m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + (2 * g) * 32)));
      const __m512 w1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + (2 * g + 1) * 32)));
      for (int t = 0; t < T; ++t) {
        const __m512 xs = g < 4 ? x0[t] : x1[t];
        acc[t] = _mm512_fmadd_ps(w0, _mm512_permutexvar_ps(i0, xs), acc[t]);
        acc1[t] = _mm512_fmadd_ps(w1, _mm512_permutexvar_ps(i1, xs), acc1[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, _mm512_add_ps(acc[t], acc1[t]));
}

}  // namespace

namespace avx512 {

void f16_2of4x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                          const int32_t* /*terms*/, int64_t n_tokens, float* y, int64_t y_stride,
                          int64_t n) {
  constexpr int64_t kMax = 4;
  const int64_t nb = n / 32;
  const auto* xb = static_cast<const std::byte*>(x);
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * f16_2of4x16_group_bytes(n);
    float* yg = y + g * 16;
    int64_t t = 0;
    for (; t + kMax <= n_tokens; t += kMax) tile<kMax>(q, nb, xb + t * x_row_bytes, x_row_bytes, yg + t * y_stride, y_stride);
    const auto rem = static_cast<int>(n_tokens - t);
    const std::byte* xt = xb + t * x_row_bytes;
    float* yt = yg + t * y_stride;
    if (rem == 3) tile<3>(q, nb, xt, x_row_bytes, yt, y_stride);
    if (rem == 2) tile<2>(q, nb, xt, x_row_bytes, yt, y_stride);
    if (rem == 1) tile<1>(q, nb, xt, x_row_bytes, yt, y_stride);
  }
}

}  // namespace avx512
}  // namespace tessera::kernels
