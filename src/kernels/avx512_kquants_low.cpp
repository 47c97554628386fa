// AVX-512 (F, BW, VL, VNNI) vec_dots of Q2_K and Q3_K against Q8_K, compiled with per-file flags
// and -ffp-contract=off (CMakeLists.txt). As the AVX2 versions, 64 levels at a time: one 32-byte
// group of packed quants is broadcast to both halves of a register and shifted by a different
// count in each (vpsrlvw), so a register holds the levels of four sub-blocks; maddubs forms the
// level * activation pairs and vpdpwssd multiplies them by each sub-block's scale and
// accumulates.
// The integer sums equal the scalar reference's and the float steps after them are the same, so
// results are bit-identical to it.
// Only intrinsics and file-local functions are used here (see avx2_kquants.cpp for why).
// GCC 12 warns that the _mm512_undefined_* placeholders inside some AVX-512 intrinsics are used
// uninitialized: a false positive about the header's own code (as in avx512_kernels.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>

#include "tessera/base/check.h"
#include "tessera/kernels/kquants_low.h"
#include "x86_kquants_low.h"

namespace tessera::kernels::avx512 {
namespace {

int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }


// Word indices spreading scales 4c .. 4c+3 over the four 128-bit lanes (8 words each).
constexpr auto kChunkSpread = [] {
  struct Table {
    alignas(64) int16_t idx[4][32];
  } t{};
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) t.idx[c][i] = static_cast<int16_t>(4 * c + i / 8);
  }
  return t;
}();

// int16 lanes: 128-bit lane L set to scale 4c + L, the sub-blocks of chunk c. `scales16` holds
// the sixteen scales in its low 256 bits.
__m512i chunk_scales(__m512i scales16, int c) {
  return _mm512_permutexvar_epi16(_mm512_load_si512(kChunkSpread.idx[c]), scales16);
}

// Per-word shift counts: `lo` for the lower 256 bits, `lo + step` for the upper.
__m512i split_shift(int lo, int step) {
  return _mm512_mask_blend_epi16(0xffff0000u, _mm512_set1_epi16(static_cast<int16_t>(lo)),
                                 _mm512_set1_epi16(static_cast<int16_t>(lo + step)));
}

// sum over the block of scale[e / 16] * level[e] * act[e], `levels(c)` giving the 64 unsigned
// levels of chunk c (elements 64c .. 64c+63).
template <typename Levels>
int32_t scaled_block_sum(__m128i scales8, const int8_t* act, Levels levels) {
  const __m512i scales16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(scales8));
  __m512i acc = _mm512_setzero_si512();
  for (int c = 0; c < 4; ++c) {
    const __m512i a = _mm512_loadu_si512(act + 64 * c);
    const __m512i pairs = _mm512_maddubs_epi16(levels(c), a);
    acc = _mm512_dpwssd_epi32(acc, pairs, chunk_scales(scales16, c));
  }
  return _mm512_reduce_add_epi32(acc);
}

// How maddubs pair sums meet int16 scales in the tiles (x86_tile256.h): one vpdpwssd.
struct VnniDot {
  static __m256i wacc(__m256i c, __m256i pairs, __m256i scales) {
    return _mm256_dpwssd_epi32(c, pairs, scales);
  }
};

}  // namespace

float q3_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ3_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const __m512i low2 = _mm512_set1_epi8(3);
  const __m512i one = _mm512_set1_epi8(1);
  // Chunk c = 2h + p covers bit pairs k = 2p, 2p+1 of qs[32h ..] and hmask bits 2c, 2c+1.
  const __m512i low_shift[2] = {split_shift(0, 2), split_shift(4, 2)};
  const __m512i high_shift[4] = {split_shift(0, 1), split_shift(2, 1), split_shift(4, 1),
                                 split_shift(6, 1)};
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const __m128i sc8 = q3_scales8(w[i].scales);
    const __m512i hm = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].hmask)));
    const uint8_t* qs = w[i].qs;
    const int32_t dot = scaled_block_sum(sc8, a[i].qs, [&](int c) {
      const __m512i q = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (c / 2))));
      const __m512i low = _mm512_and_si512(_mm512_srlv_epi16(q, low_shift[c % 2]), low2);
      const __m512i high = _mm512_and_si512(_mm512_srlv_epi16(hm, high_shift[c]), one);
      return _mm512_or_si512(low, _mm512_slli_epi16(high, 2));  // level + 4, in 0..7
    });
    // The levels carry +4: remove 4 * scale[j] * (sum of the activations in j) through bsums.
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    const int32_t isum = dot - 4 * hsum_i32(_mm256_madd_epi16(bs, _mm256_cvtepi8_epi16(sc8)));
    const float d = a[i].d * f16_to_f32(w[i].d);
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

float q2_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ2_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const __m512i low2 = _mm512_set1_epi8(3);
  const __m128i low4 = _mm_set1_epi8(15);
  const __m512i low_shift[2] = {split_shift(0, 2), split_shift(4, 2)};
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].scales));
    const __m128i sc8 = _mm_and_si128(sm, low4);
    const __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), low4));
    const uint8_t* qs = w[i].qs;
    const int32_t isum = scaled_block_sum(sc8, a[i].qs, [&](int c) {
      const __m512i q = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (c / 2))));
      return _mm512_and_si512(_mm512_srlv_epi16(q, low_shift[c % 2]), low2);
    });
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    const int32_t msum = hsum_i32(_mm256_madd_epi16(bs, m16));
    const float d = a[i].d * f16_to_f32(w[i].d);
    const float dmin = a[i].d * f16_to_f32(w[i].dmin);
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

void q2_k_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  dispatch_tile<Tile256<Q2_KTileFormat, VnniDot>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                                              y_stride, n);
}

void q3_k_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  dispatch_tile<Tile256<Q3_KTileFormat, VnniDot>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                                              y_stride, n);
}

}  // namespace tessera::kernels::avx512
