// AVX-512 (F, BW, VL, VNNI) IQ4_NL / IQ4_XS vec_dots (compiled with per-file ISA flags and
// -ffp-contract=off; see CMakeLists.txt). The levels are looked up offset by +128 so they are
// unsigned, as vpdpbusd wants: sum (level + 128) * a - 128 * sum a is the exact signed dot,
// accumulated in int32 without the int16 pair limit of maddubs. Integer sums are exact and the
// float steps are the scalar reference's in its order, so results are bit-identical. Only
// intrinsics and file-local helpers are used (see avx2_kquants.cpp for why). IQ4_NL works one
// 32-value block per 256-bit register (its blocks are 18 bytes apart, so pairs would need
// gathering); IQ4_XS two sub-blocks per 512-bit register, their 64 indices and activations being
// contiguous, with the steps applied by vpmulld and the offset removed through Q8_K's bsums.
//
// GCC 12 warns about the _mm512_undefined_* placeholders inside AVX-512 intrinsics: a false
// positive about the header's own code, silenced as in avx512_kernels.cpp.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>

#include "tessera/base/check.h"
#include "tessera/kernels/iquants.h"
#include "tessera/kernels/quant_blocks.h"
#include "x86_iquants.h"

namespace tessera::kernels::avx512 {
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

// The levels plus 128, as unsigned bytes, in both 128-bit lanes.
__m256i offset_table() {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Levels));
  const __m128i u = _mm_xor_si128(t, _mm_set1_epi8(static_cast<char>(0x80)));  // + 128 mod 256
  return _mm256_set_m128i(u, u);
}

// 8 int32 lanes summing (level + 128) * activation over a 32-value group.
__m256i offset_dot(const uint8_t* qs, const int8_t* act, __m256i table) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  const __m256i u = _mm256_shuffle_epi8(table, _mm256_and_si256(both, _mm256_set1_epi8(0x0f)));
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act));
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a);
}

// 8 int32 lanes summing the signed level * activation products of one IQ4_NL block.
__m256i block_dot(const BlockIQ4_NL& w, const BlockQ8_0& a, __m256i table) {
  const __m256i act = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
  const __m256i act128 = _mm256_dpbusd_epi32(_mm256_setzero_si256(),
                                             _mm256_set1_epi8(static_cast<char>(0x80)), act);
  return _mm256_sub_epi32(offset_dot(w.qs, a.qs, table), act128);
}

// How the tiles (x86_iquants.h) form integer dots: vpdpbusd and vpdpwssd.
struct VnniDot {
  static constexpr bool kVnni = true;
  static __m256i u8s8(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  }
  static __m256i acc(__m256i c, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(c, u, s); }
  static __m256i wacc(__m256i c, __m256i pairs, __m256i scales) {
    return _mm256_dpwssd_epi32(c, pairs, scales);
  }
};

}  // namespace

float iq4_nl_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK4_NL == 0);
  const auto* w = static_cast<const BlockIQ4_NL*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  const int64_t nb = n / kQK4_NL;
  const __m256i table = offset_table();
  float sum = 0.0f;
  int64_t i = 0;
  // As the AVX2 kernel: eight blocks' products in one vector, added to `sum` in block order.
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
  const __m512i table = _mm512_broadcast_i32x4(_mm256_castsi256_si128(offset_table()));
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  // Shift counts that bring sub-block j's scale bits to the bottom of lane j.
  const __m256i shift_l = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i shift_h = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint32_t packed_l;
    __builtin_memcpy(&packed_l, w[i].scales_l, 4);
    const __m256i lo = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(packed_l)), shift_l), _mm256_set1_epi32(15));
    const __m256i hi = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(w[i].scales_h), shift_h), _mm256_set1_epi32(3));
    const __m256i scales8 = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)),
                                             _mm256_set1_epi32(32));  // step s - 32 of lane j
    const __m512i scales = _mm512_zextsi256_si512(scales8);
    __m512i acc = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {  // sub-blocks 2p and 2p+1: 32 index bytes, 64 activations
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * p));
      const __m256i nib_lo = _mm256_and_si256(q, low4);
      const __m256i nib_hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      // [lo 2p, lo 2p+1, hi 2p, hi 2p+1] -> [lo 2p, hi 2p, lo 2p+1, hi 2p+1]: element order.
      const __m512i idx = _mm512_shuffle_i64x2(
          _mm512_inserti64x4(_mm512_zextsi256_si512(nib_lo), nib_hi, 1),
          _mm512_inserti64x4(_mm512_zextsi256_si512(nib_lo), nib_hi, 1), _MM_SHUFFLE(3, 1, 2, 0));
      const __m512i u = _mm512_shuffle_epi8(table, idx);
      const __m512i act = _mm512_loadu_si512(a[i].qs + 64 * p);
      const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, act);
      const __m512i sc = _mm512_permutexvar_epi32(
          _mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1,
                            2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                            2 * p + 1),
          scales);
      acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(dot, sc));
    }
    // The +128 offset's share, sum_j scale_j * 128 * (activations of j), from Q8_K's bsums:
    // madd pairs bsums 2j, 2j+1 with scale j duplicated into both int16 halves.
    const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    const __m256i sc16 = _mm256_or_si256(_mm256_and_si256(scales8, _mm256_set1_epi32(0xffff)),
                                         _mm256_slli_epi32(scales8, 16));
    const int32_t offset = hsum_i32(_mm256_madd_epi16(bsums, sc16));
    const int32_t isum = _mm512_reduce_add_epi32(acc) - 128 * offset;
    const float d = a[i].d * _cvtsh_ss(w[i].d);
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

void iq4_nl_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                              size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                              int64_t n) {
  TS_CHECK(n % kQK4_NL == 0);
  dispatch_tile<Tile32<IQ4_NLFormat<VnniDot>>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                                            y_stride, n);
}

void iq4_xs_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                              size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                              int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  dispatch_tile<Tile256<IQ4_XSTileFormat, VnniDot>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens,
                                                y, y_stride, n);
}

}  // namespace tessera::kernels::avx512
