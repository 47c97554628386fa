// AVX2 IQ4_NL / IQ4_XS vec_dots (compiled with -mavx2 -mfma -mf16c -ffp-contract=off; see
// CMakeLists.txt). The table lookup is one byte shuffle of the 16 levels by the 4-bit indices; the
// signed levels meet the signed activations in maddubs through the sign trick (|level| on the
// unsigned side, the level's sign moved onto the activation: pairs reach at most 2 * 127 * 127,
// below int16's limit, given activations in [-127, 127]). The integer block sums are exact and the
// float steps after them are the scalar reference's operations in its order, so results are
// bit-identical. Only intrinsics and file-local helpers are used (see avx2_kquants.cpp for why).
#include <immintrin.h>

#include <cstdint>

#include "tessera/base/check.h"
#include "tessera/kernels/iquants.h"
#include "tessera/kernels/quant_blocks.h"
#include "x86_iquants.h"

namespace tessera::kernels::avx2 {
namespace {

int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Lane k of the result = sum of the eight lanes of v[k].
__m256i hsum8_i32(const __m256i v[8]) {
  const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

__m256i level_table() {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Levels));
  return _mm256_set_m128i(t, t);
}

// The 32 levels of a 32-value group (IQ4_NL nibble layout) as int8 in element order.
__m256i levels32(const uint8_t* qs, __m256i table) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_shuffle_epi8(table, _mm256_and_si256(both, _mm256_set1_epi8(0x0f)));
}

// int16 pair sums of levels * activations (exact: see the file comment).
__m256i pair_dot(__m256i levels, const int8_t* act) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act));
  return _mm256_maddubs_epi16(_mm256_sign_epi8(levels, levels), _mm256_sign_epi8(a, levels));
}

__m256i block_dot(const BlockIQ4_NL& w, const BlockQ8_0& a, __m256i table) {
  return _mm256_madd_epi16(pair_dot(levels32(w.qs, table), a.qs), _mm256_set1_epi16(1));
}

// How the tiles (x86_iquants.h) form integer dots: maddubs + madd.
struct Avx2Dot {
  static constexpr bool kVnni = false;
  static __m256i u8s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
  static __m256i acc(__m256i c, __m256i u, __m256i s) { return _mm256_add_epi32(c, u8s8(u, s)); }
  static __m256i wacc(__m256i c, __m256i pairs, __m256i scales) {
    return _mm256_add_epi32(c, _mm256_madd_epi16(pairs, scales));
  }
};

}  // namespace

float iq4_nl_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK4_NL == 0);
  const auto* w = static_cast<const BlockIQ4_NL*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  const int64_t nb = n / kQK4_NL;
  const __m256i table = level_table();
  float sum = 0.0f;
  int64_t i = 0;
  // Eight blocks at a time: their integer sums side by side, the eight (d_w * d_a) * isum products
  // in one vector, then added to `sum` one by one in block order, as the reference does.
  for (; i + 8 <= nb; i += 8) {
    __m256i dots[8];
    for (int k = 0; k < 8; ++k) dots[k] = block_dot(w[i + k], a[i + k], table);
    const __m256 isum = _mm256_cvtepi32_ps(hsum8_i32(dots));
    const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(
        static_cast<int16_t>(w[i].d), static_cast<int16_t>(w[i + 1].d),
        static_cast<int16_t>(w[i + 2].d), static_cast<int16_t>(w[i + 3].d),
        static_cast<int16_t>(w[i + 4].d), static_cast<int16_t>(w[i + 5].d),
        static_cast<int16_t>(w[i + 6].d), static_cast<int16_t>(w[i + 7].d)));
    const __m256 da = _mm256_cvtph_ps(_mm_setr_epi16(
        static_cast<int16_t>(a[i].d), static_cast<int16_t>(a[i + 1].d),
        static_cast<int16_t>(a[i + 2].d), static_cast<int16_t>(a[i + 3].d),
        static_cast<int16_t>(a[i + 4].d), static_cast<int16_t>(a[i + 5].d),
        static_cast<int16_t>(a[i + 6].d), static_cast<int16_t>(a[i + 7].d)));
    alignas(32) float p[8];
    _mm256_store_ps(p, _mm256_mul_ps(_mm256_mul_ps(dw, da), isum));
    for (int k = 0; k < 8; ++k) sum += p[k];
  }
  for (; i < nb; ++i) {
    const int32_t isum = hsum_i32(block_dot(w[i], a[i], table));
    sum += _cvtsh_ss(w[i].d) * _cvtsh_ss(a[i].d) * static_cast<float>(isum);
  }
  return sum;
}

float iq4_xs_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockIQ4_XS*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const __m256i table = level_table();
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    __m256i acc = _mm256_setzero_si256();
    for (int j = 0; j < kQK_K / kQK4_NL; ++j) {
      const int scale = (((w[i].scales_l[j / 2] >> (4 * (j % 2))) & 15) |
                         (((w[i].scales_h >> (2 * j)) & 3) << 4)) - 32;
      const __m256i pairs = pair_dot(levels32(w[i].qs + 16 * j, table), a[i].qs + 32 * j);
      // pairs <= 32258 in magnitude, scale in -32..31: madd's int32 sums cannot overflow.
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(static_cast<int16_t>(scale))));
    }
    const float d = a[i].d * _cvtsh_ss(w[i].d);
    sum += d * static_cast<float>(hsum_i32(acc));
  }
  return sum;
}

void iq4_nl_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                              size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                              int64_t n) {
  TS_CHECK(n % kQK4_NL == 0);
  dispatch_tile<Tile32<IQ4_NLFormat<Avx2Dot>>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                                            y_stride, n);
}

void iq4_xs_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                              size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                              int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  dispatch_tile<Tile256<IQ4_XSTileFormat, Avx2Dot>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens,
                                                y, y_stride, n);
}

}  // namespace tessera::kernels::avx2
