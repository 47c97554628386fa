// AVX2 k-quant kernels (compiled with -mavx2 -mfma -mf16c -ffp-contract=off; see CMakeLists.txt).
// Each block's integer sums are the scalar reference's, computed 32 lanes at a time with
// maddubs/madd (no int16 saturation is reachable: |level| <= 63, |q8| <= 127), and the float
// steps after them are the same operations in the same order, so results are bit-identical.
// Only intrinsics and file-local functions are used here: an inline function from a shared header
// compiled in this file could become the one copy the linker keeps for every caller, and then
// run AVX code on a CPU without it.
#include <immintrin.h>

#include <cstdint>

#include "tessera/base/check.h"
#include "tessera/kernels/kquants.h"

namespace tessera::kernels::avx2 {
namespace {

constexpr float kMinQ8Amax = 1e-30f;  // as scalar::q8_k_from_float

int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

float hmax_ps(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

// As kernels::unpack_scale_min, for all eight sub-blocks.
void unpack_scales_mins(const uint8_t* p, int32_t sc[8], int32_t m[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = p[j] & 63;
    m[j] = p[j + 4] & 63;
    sc[j + 4] = (p[j + 8] & 15) | ((p[j] >> 6) << 4);
    m[j + 4] = (p[j + 8] >> 4) | ((p[j + 4] >> 6) << 4);
  }
}

// sum over sub-blocks j of m[j] * (sum of the activations in j), from the Q8_K bsums.
int32_t min_sum(const int32_t m[8], const int16_t* bsums) {
  int32_t s = 0;
  for (int j = 0; j < 8; ++j) s += m[j] * (bsums[2 * j] + bsums[2 * j + 1]);
  return s;
}

// 8 int32 lanes summing scale * (levels . activations) over 32 unsigned levels and 32 int8s.
__m256i scaled_dot32(__m256i levels, const int8_t* act, int32_t scale) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act));
  const __m256i pairs = _mm256_maddubs_epi16(levels, a);
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(static_cast<int16_t>(scale)));
}

}  // namespace

float q4_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ4_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int32_t sc[8], m[8];
    unpack_scales_mins(w[i].scales, sc, m);
    __m256i acc = _mm256_setzero_si256();
    for (int g = 0; g < 4; ++g) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * g));
      const __m256i lo = _mm256_and_si256(q, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      acc = _mm256_add_epi32(acc, scaled_dot32(lo, a[i].qs + 64 * g, sc[2 * g]));
      acc = _mm256_add_epi32(acc, scaled_dot32(hi, a[i].qs + 64 * g + 32, sc[2 * g + 1]));
    }
    const int32_t isum = hsum_i32(acc);
    const int32_t msum = min_sum(m, a[i].bsums);
    const float d = a[i].d * f16_to_f32(w[i].d);
    const float dmin = a[i].d * f16_to_f32(w[i].dmin);
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

float q5_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ5_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i one = _mm256_set1_epi8(1);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int32_t sc[8], m[8];
    unpack_scales_mins(w[i].scales, sc, m);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qh));
    __m256i acc = _mm256_setzero_si256();
    for (int g = 0; g < 4; ++g) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs + 32 * g));
      // Fifth bits: bit 2g of each qh byte for the low nibbles, bit 2g+1 for the high ones. The
      // 16-bit shifts move each byte's own bit to bit 0, the masks drop what crossed from its
      // neighbour, and the shift by 4 stays inside the byte.
      const __m256i h_lo = _mm256_slli_epi16(
          _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g)), one), 4);
      const __m256i h_hi = _mm256_slli_epi16(
          _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g + 1)), one), 4);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, low4), h_lo);
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4), h_hi);
      acc = _mm256_add_epi32(acc, scaled_dot32(lo, a[i].qs + 64 * g, sc[2 * g]));
      acc = _mm256_add_epi32(acc, scaled_dot32(hi, a[i].qs + 64 * g + 32, sc[2 * g + 1]));
    }
    const int32_t isum = hsum_i32(acc);
    const int32_t msum = min_sum(m, a[i].bsums);
    const float d = a[i].d * f16_to_f32(w[i].d);
    const float dmin = a[i].d * f16_to_f32(w[i].dmin);
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

float q6_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ6_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i low2 = _mm256_set1_epi8(3);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const int8_t* sc = w[i].scales;
    __m256i acc = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = w[i].ql + 64 * half;
      const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qh + 32 * half));
      // Levels 0..63 of the four 32-value quarters of this half (layout in kquant_blocks.h).
      const __m256i nibbles[4] = {
          _mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
          _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
          _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
      for (int k = 0; k < 4; ++k) {
        const __m256i high = _mm256_slli_epi16(
            _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k)), low2), 4);
        const __m256i levels = _mm256_or_si256(nibbles[k], high);
        const __m256i act = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(a[i].qs + 128 * half + 32 * k));
        const __m256i pairs = _mm256_maddubs_epi16(levels, act);
        // Values 0-15 of the quarter (low 128 bits) are sub-block 8h+2k, values 16-31 the next.
        const int s = 8 * half + 2 * k;
        const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(sc[s + 1]), _mm_set1_epi16(sc[s]));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scales));
      }
    }
    // The levels carry +32; remove it per sub-block through bsums, as the scalar kernel does.
    int32_t offset = 0;
    for (int j = 0; j < kQK_K / 16; ++j) offset += sc[j] * a[i].bsums[j];
    const int32_t isum = hsum_i32(acc) - 32 * offset;
    const float d = a[i].d * f16_to_f32(w[i].d);
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

void q8_k_from_float(const float* src, void* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockQ8_K*>(dst);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 lo = _mm256_set1_ps(-127.0f);
  const __m256 hi = _mm256_set1_ps(127.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    __m256 vmax = _mm256_setzero_ps();
    // max_ps returns its second operand when either is NaN: keep the running max there, so NaN
    // inputs are ignored as std::max ignores them in the scalar kernel.
    for (int e = 0; e < kQK_K; e += 8) {
      vmax = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + e)), vmax);
    }
    const float amax = hmax_ps(vmax);
    if (!(amax >= kMinQ8Amax)) {
      __builtin_memset(&b[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(1.0f / d);
    b[i].d = d;
    for (int e = 0; e < kQK_K; e += 32) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + e + 8 * k), id);
        v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);  // NaN -> -127, as the scalar clamp
        q[k] = _mm256_cvtps_epi32(v);                  // round half to even (default MXCSR)
      }
      b[i].bsums[e / 16] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      b[i].bsums[e / 16 + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
      const __m256i w16 = _mm256_packs_epi32(q[0], q[1]);  // lanes interleave; fixed below
      const __m256i w8 = _mm256_packs_epi16(w16, _mm256_packs_epi32(q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs + e),
                          _mm256_permutevar8x32_epi32(w8, order));
    }
  }
}

}  // namespace tessera::kernels::avx2
