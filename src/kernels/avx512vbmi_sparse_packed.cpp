// The Q8_0_2of4x16 gather kernel (packed_q8_0_2of4.h), compiled with the AVX-512 set plus VBMI
// (vpermb, vpmultishiftqb) and -ffp-contract=off: bit for bit the scalar reference.
//
// Per block of a group (16 rows x 32 weights, 352 bytes): one 64-byte load of the codes gives,
// per chunk c of 4 kept values per row, the vpermb control (one vpmultishiftqb brings each kept
// value's 2-bit code to the bottom of its byte, one vpternlogd keeps those bits and ORs in the
// chunk's 8c + 4 (j / 2)); the control is computed once per block for all tokens of the tile.
// Per token: the block's 32 activation bytes broadcast to both halves of a register, then per
// chunk one vpermb gathers the 64 activation bytes the 16 rows' kept values meet, one vpdpbusd
// multiplies them by the kept values (stored + 128) and one more sums the gathered bytes times
// 128 (the offset's correction, per row).
// GCC 12 reports its own headers' undefined-register idiom (__Y) as maybe-uninitialized here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "tessera/kernels/packed_q8_0_2of4.h"
#include "tessera/kernels/quant_blocks.h"

namespace tessera::kernels {
namespace {

// vpmultishiftqb control for chunk c: in each qword (lanes 2i, 2i + 1) output byte 4h + j takes
// the 8 bits from bit 32h + 8c + 2j (lane h's code byte c, kept value j's code at the bottom).
__m512i shift_control(int c) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= uint64_t(32 * (k >> 2) + 8 * c + 2 * (k & 3)) << (8 * k);
  return _mm512_set1_epi64(static_cast<long long>(v));
}
// The chunk's index base per byte j of a lane: 8c + 4 (j / 2).
__m512i index_base(int c) {
  const uint32_t b = static_cast<uint32_t>(8 * c) * 0x01010101u + 0x04040000u;
  return _mm512_set1_epi32(static_cast<int>(b));
}

constexpr int kPrefetchBytes = 20 * 704;

template <int T>
void tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
          const int32_t* terms, float* y, int64_t y_stride) {
  const __m512i ctrl0 = shift_control(0), ctrl1 = shift_control(1), ctrl2 = shift_control(2),
                ctrl3 = shift_control(3);
  const __m512i base0 = index_base(0), base1 = index_base(1), base2 = index_base(2),
                base3 = index_base(3);
  const __m512i three = _mm512_set1_epi8(3), offset = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + q8_0_2of4x16_quants_at(b);
    // The record's 11 lines ahead, six with its first block, five with its second, with the
    // non-temporal hint as the dense Q8_0x16 decode tile (avx512_kernels.cpp): without it the
    // kernel streamed 2048 x 5632 from DRAM at 5.8-6.0 GB/s against dense Q8_0x16's 9.3-10.
    if (T <= 2) {
      const uint8_t* ahead = q + (b / 2) * 704 + kPrefetchBytes;
      for (int c = (b % 2) * 6; c < (b % 2 == 0 ? 6 : 11); ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + c * 64), _MM_HINT_NTA);
      }
    }
    const __m512i codes = _mm512_loadu_si512(q + q8_0_2of4x16_codes_at(b, nb));
    // (code & 3) | base: imm 0xEA = (A & B) | C.
    const __m512i idx0 = _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(ctrl0, codes), three, base0, 0xEA);
    const __m512i idx1 = _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(ctrl1, codes), three, base1, 0xEA);
    const __m512i idx2 = _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(ctrl2, codes), three, base2, 0xEA);
    const __m512i idx3 = _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(ctrl3, codes), three, base3, 0xEA);
    const __m512i w0 = _mm512_loadu_si512(qb), w1 = _mm512_loadu_si512(qb + 64);
    const __m512i w2 = _mm512_loadu_si512(qb + 128), w3 = _mm512_loadu_si512(qb + 192);
    const __m512 dw = _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + q8_0_2of4x16_scales_at(b, nb))));
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes) + b;
      const __m512i av = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a->qs)));
      const __m512i g0 = _mm512_permutexvar_epi8(idx0, av), g1 = _mm512_permutexvar_epi8(idx1, av);
      const __m512i g2 = _mm512_permutexvar_epi8(idx2, av), g3 = _mm512_permutexvar_epi8(idx3, av);
      __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w0, g0);
      __m512i corr = _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset, g0);
      s = _mm512_dpbusd_epi32(s, w1, g1);
      corr = _mm512_dpbusd_epi32(corr, offset, g1);
      s = _mm512_dpbusd_epi32(s, w2, g2);
      corr = _mm512_dpbusd_epi32(corr, offset, g2);
      s = _mm512_dpbusd_epi32(s, w3, g3);
      corr = _mm512_dpbusd_epi32(corr, offset, g3);
      float da;
      std::memcpy(&da, terms + 2 * (t * nb + b) + 1, sizeof da);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da)),
                               _mm512_cvtepi32_ps(_mm512_sub_epi32(s, corr)), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

}  // namespace

namespace avx512vbmi {

void q8_0_2of4x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x,
                            size_t x_row_bytes, const int32_t* terms, int64_t n_tokens, float* y,
                            int64_t y_stride, int64_t n) {
  constexpr int64_t kMax = 4;
  const int64_t nb = n / kQK8_0;
  const auto* xb = static_cast<const std::byte*>(x);
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * q8_0_2of4x16_group_bytes(n);
    float* yg = y + g * 16;
    int64_t t = 0;
    for (; t + kMax <= n_tokens; t += kMax) {
      tile<kMax>(q, nb, xb + t * x_row_bytes, x_row_bytes, terms + 2 * t * nb, yg + t * y_stride, y_stride);
    }
    const auto rem = static_cast<int>(n_tokens - t);
    const std::byte* xt = xb + t * x_row_bytes;
    const int32_t* tt = terms + 2 * t * nb;
    float* yt = yg + t * y_stride;
    if (rem == 3) tile<3>(q, nb, xt, x_row_bytes, tt, yt, y_stride);
    if (rem == 2) tile<2>(q, nb, xt, x_row_bytes, tt, yt, y_stride);
    if (rem == 1) tile<1>(q, nb, xt, x_row_bytes, tt, yt, y_stride);
  }
}

}  // namespace avx512vbmi
}  // namespace tessera::kernels
