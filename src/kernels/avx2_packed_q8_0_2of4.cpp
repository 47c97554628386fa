// The AVX2 Q8_0_2of4x16 gather kernel (packed_q8_0_2of4.h): bit for bit the scalar reference.
//
// As the AVX-512 VBMI kernel it gathers the activations instead of expanding the weights, but
// without vpermb: chunk c's kept values (4 per row) meet activation bytes 8c .. 8c + 7 only, so
// those 8 bytes broadcast to every 64-bit lane and one vpshufb (indices 0..7, within 128-bit
// lanes) gathers what 8 rows x 4 kept values need. The indices, 4 * (j / 2) + code, come from
// the codes once per block and half-group for all the tile's tokens (shifts and masks: a code
// byte's four 2-bit fields spread to its four bytes). The products are signed x signed, so they
// go through the sign trick, vpmaddubsw(|w|, sign(a, w)), exact for any kept byte and activations
// in [-127, 127] (avx2_packed.h); the chain starts at zero: sum (w + 128) a - 128 sum a = sum w a.
//
// Per token and half-block (8 rows x 16 kept values): 4 x (broadcast load, vpshufb, vpsignb,
// vpmaddubsw, vpmaddwd, add) + 3 float steps, about 60% of dense Q8_0x16's 36 for 8 x 32 weights.
// Decode reads 22 bytes per row and block against dense Q8_0's 34 (0.65x), the bound it aims at.
#include <immintrin.h>

#include <cstring>

#include "tessera/kernels/avx2_packed.h"
#include "tessera/kernels/packed_q8_0_2of4.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/x86_packed_groups.h"

namespace tessera::kernels {
namespace {

// Decode tiles prefetch the group this far ahead with the non-temporal hint, as the AVX-512
// kernel (avx512vbmi_sparse_packed.cpp) measured best.
constexpr size_t kPrefetchBytes = 20 * 704;

// vpshufb indices of chunk c for 8 rows: byte j of row l's dword is 4 (j / 2) + code, the code
// at bits 8c + 2j of the row's code dword.
__m256i chunk_indices(__m256i codes, int c) {
  const __m256i r = _mm256_and_si256(_mm256_srli_epi32(codes, 8 * c), _mm256_set1_epi32(0xff));
  // Field j (bits 2j, 2j + 1) moves to bits 8j, 8j + 1: shifted by 6j; the other fields' copies
  // land outside the kept bits (the mask) and, the byte masked first, nothing carries.
  const __m256i spread = _mm256_or_si256(_mm256_or_si256(r, _mm256_slli_epi32(r, 6)),
                                         _mm256_or_si256(_mm256_slli_epi32(r, 12), _mm256_slli_epi32(r, 18)));
  return _mm256_or_si256(_mm256_and_si256(spread, _mm256_set1_epi32(0x03030303)),
                         _mm256_set1_epi32(0x04040000));
}

// Both 8-row halves of one group against T tokens, chunk by chunk: a chunk's indices and weights
// are made once for all the tokens, whose integer sums stay in registers.
template <int T>
void tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
          const int32_t* terms, float* y, int64_t y_stride) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T][2];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + q8_0_2of4x16_quants_at(b);
    if constexpr (T <= 2) {  // a block's 352 bytes, 64 apart
      const uint8_t* ahead = q + b * 352 + kPrefetchBytes;
      for (int off = 0; off < 352; off += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_NTA);
    }
    const uint8_t* codes_at = q + q8_0_2of4x16_codes_at(b, nb);
    const __m256i codes[2] = {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes_at)),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes_at + 32))};
    __m256i dot[T][2];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m256i idx[2], w[2], wabs[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        idx[h] = chunk_indices(codes[h], c);
        w[h] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + c * 64 + h * 32)), flip);
        wabs[h] = _mm256_abs_epi8(w[h]);
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        int64_t eight;
        std::memcpy(&eight, reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[b].qs + 8 * c, sizeof eight);
        const __m256i a8 = _mm256_set1_epi64x(eight);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m256i g = _mm256_shuffle_epi8(a8, idx[h]);
          const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs[h], _mm256_sign_epi8(g, w[h])), ones);
          dot[t][h] = c == 0 ? p : _mm256_add_epi32(dot[t][h], p);
        }
      }
    }
    const uint8_t* sc = q + q8_0_2of4x16_scales_at(b, nb);
    const __m256 dw[2] = {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc))),
                          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16)))};
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      float da;
      std::memcpy(&da, terms + 2 * (t * nb + b) + 1, sizeof da);
      const __m256 vda = _mm256_set1_ps(da);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw[h], vda), _mm256_cvtepi32_ps(dot[t][h]), acc[t][h]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(y + t * y_stride, acc[t][0]);
    _mm256_storeu_ps(y + t * y_stride + 8, acc[t][1]);
  }
}

template <int T>
struct Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    tile<T>(q, n / 32, x, xrb, aux, y, ys);
  }
};

}  // namespace

namespace avx2 {

void q8_0_2of4x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x,
                            size_t x_row_bytes, const int32_t* terms, int64_t n_tokens, float* y,
                            int64_t y_stride, int64_t n) {
  run_groups<6, Tile>(groups, q8_0_2of4x16_group_bytes(n), n_groups, x, x_row_bytes, terms,
                      2 * (n / 32), n_tokens, y, y_stride, n);
}

}  // namespace avx2
}  // namespace tessera::kernels
