// AVX-512 2:4 vec_dots (compiled with the AVX-512 set plus VBMI2 and -ffp-contract=off; see
// CMakeLists.txt). Kept values go back to their dense positions by one vpexpandb (int8) or
// vpexpandw (f16) with the block's keep-mask as the write mask; the rest is the dense dot.
// GCC 12 reports its own headers' undefined-register idiom (__Y) as maybe-uninitialized here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "tessera/base/check.h"
#include "tessera/kernels/sparse_quants.h"
#include "x86_sparse_quants.h"

namespace tessera::kernels {
namespace {

struct Avx512Vbmi2 {
  static __m256i expand_bytes(__m128i kept, uint32_t mask) {
    return _mm256_maskz_expand_epi8(mask, _mm256_castsi128_si256(kept));
  }
  // |w| (unsigned) times q with w's sign, by vpdpbusd; |w| <= 128 and |q| <= 127 for Q8_0.
  static __m256i dot_s8s8(__m256i w, __m256i q) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(w), _mm256_sign_epi8(q, w));
  }
};

float hsum512(__m512 v) {
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

namespace avx512 {

float f16_2of4_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK2of4 == 0);
  const auto* b = static_cast<const BlockF16_2of4*>(row);
  const auto* xf = static_cast<const float*>(x);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  for (int64_t i = 0; i < n / kQK2of4; ++i) {
    const __m256i kept = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].v));
    const __m512i h = _mm512_maskz_expand_epi16(load_mask32(b[i].mask), _mm512_zextsi256_si512(kept));
    acc0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(h)),
                           _mm512_loadu_ps(xf + i * kQK2of4), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)),
                           _mm512_loadu_ps(xf + i * kQK2of4 + 16), acc1);
  }
  return hsum512(_mm512_add_ps(acc0, acc1));
}

float q8_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK2of4 == 0);
  return q8_0_2of4_vec_dot_body<Avx512Vbmi2>(static_cast<const BlockQ8_0_2of4*>(row),
                                             static_cast<const BlockQ8_0*>(x), n / kQK2of4);
}

float q4_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK4_0_2of4 == 0);
  return q4_0_2of4_vec_dot_body<Avx512Vbmi2>(static_cast<const BlockQ4_0_2of4*>(row),
                                             static_cast<const BlockQ8_0*>(x), n / kQK4_0_2of4);
}

}  // namespace avx512
}  // namespace tessera::kernels
