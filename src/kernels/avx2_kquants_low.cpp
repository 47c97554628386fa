// AVX2 vec_dots of Q2_K and Q3_K against Q8_K (compiled with -mavx2 -mfma -mf16c
// -ffp-contract=off; see CMakeLists.txt). Levels are unpacked 32 at a time into unsigned bytes
// (Q3_K's carry +4) and multiplied with the activations by maddubs/madd; no int16 saturation is
// reachable (level <= 7, |q8| <= 127). The per-sub-block scale products and the bsums terms are
// the scalar reference's integers, and the float steps after them are the same operations in the
// same order, so results are bit-identical to it.
// Only intrinsics and file-local functions are used here (see avx2_kquants.cpp for why).
#include <immintrin.h>

#include <cstdint>

#include "tessera/base/check.h"
#include "tessera/kernels/kquants_low.h"
#include "x86_kquants_low.h"

namespace tessera::kernels::avx2 {
namespace {

int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }


// The scales as int16s in memory, for the broadcast loads of pair_scales.
struct Scales16 {
  alignas(32) int16_t v[16];
  explicit Scales16(__m128i scales8) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(v), _mm256_cvtepi8_epi16(scales8));
  }
  __m256i all() const { return _mm256_load_si256(reinterpret_cast<const __m256i*>(v)); }
};

// int16 lanes 0-7 set to scale 2p, 8-15 to scale 2p+1: the two sub-blocks of a 32-value group,
// as maddubs lays out their pair sums.
__m256i pair_scales(const Scales16& s, int p) {
  return _mm256_set_m128i(_mm_set1_epi16(s.v[2 * p + 1]), _mm_set1_epi16(s.v[2 * p]));
}

// How maddubs pair sums meet int16 scales in the tiles (x86_tile256.h).
struct Avx2Dot {
  static __m256i wacc(__m256i c, __m256i pairs, __m256i scales) {
    return _mm256_add_epi32(c, _mm256_madd_epi16(pairs, scales));
  }
};

}  // namespace

float q3_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ3_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const __m256i low2 = _mm256_set1_epi8(3);
  const __m256i one = _mm256_set1_epi8(1);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const Scales16 sc(q3_scales8(w[i].scales));
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].hmask));
    __m256i acc = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * h));
      for (int k = 0; k < 4; ++k) {
        // Unsigned level + 4 = low bits | high bit << 2. The 16-bit shifts carry bits across
        // bytes; the masks keep only each byte's own.
        const __m256i low = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * k)), low2);
        const int bit = 4 * h + k;
        // Bit `bit` of each hmask byte moved to bit 2: shift right by bit, mask to bit 0, << 2.
        const __m256i hb = _mm256_slli_epi16(
            _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(bit)), one),
            2);
        const __m256i levels = _mm256_or_si256(low, hb);
        const __m256i act = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(a[i].qs + 128 * h + 32 * k));
        const __m256i pairs = _mm256_maddubs_epi16(levels, act);
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, pair_scales(sc, 4 * h + k)));
      }
    }
    // The levels carry +4: remove 4 * scale[j] * (sum of the activations in j) through bsums.
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    const int32_t offset = hsum_i32(_mm256_madd_epi16(bs, sc.all()));
    const int32_t isum = hsum_i32(acc) - 4 * offset;
    const float d = a[i].d * f16_to_f32(w[i].d);
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

float q2_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ2_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const __m256i low2 = _mm256_set1_epi8(3);
  const __m128i low4 = _mm_set1_epi8(15);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].scales));
    const Scales16 sc(_mm_and_si128(sm, low4));
    const __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), low4));
    __m256i acc = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * h));
      for (int k = 0; k < 4; ++k) {
        const __m256i levels =
            _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * k)), low2);
        const __m256i act = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(a[i].qs + 128 * h + 32 * k));
        const __m256i pairs = _mm256_maddubs_epi16(levels, act);
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, pair_scales(sc, 4 * h + k)));
      }
    }
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].bsums));
    const int32_t msum = hsum_i32(_mm256_madd_epi16(bs, m16));
    const int32_t isum = hsum_i32(acc);
    const float d = a[i].d * f16_to_f32(w[i].d);
    const float dmin = a[i].d * f16_to_f32(w[i].dmin);
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

void q2_k_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  dispatch_tile<Tile256<Q2_KTileFormat, Avx2Dot>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                                              y_stride, n);
}

void q3_k_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  dispatch_tile<Tile256<Q3_KTileFormat, Avx2Dot>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                                              y_stride, n);
}

}  // namespace tessera::kernels::avx2
