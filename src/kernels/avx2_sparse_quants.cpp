// AVX2 2:4 vec_dots (compiled with -mavx2 -mfma -mf16c -ffp-contract=off; see CMakeLists.txt).
// Kept values go back to their dense positions by pshufb, the control bytes read from a
// 256-entry table per mask byte (two groups of four weights) and offset by the rank of the
// byte's first kept value (4 per byte: each group keeps 2).
#include <immintrin.h>

#include "tessera/base/check.h"
#include "tessera/kernels/sparse_quants.h"
#include "x86_sparse_quants.h"

namespace tessera::kernels {
namespace {

constexpr auto kExpand8 = make_expand_table<1>();   // int8: 8 control bytes per mask byte
constexpr auto kExpand16 = make_expand_table<2>();  // f16: 16 control bytes per mask byte

struct Avx2Shuffle {
  static __m256i expand_bytes(__m128i kept, uint32_t mask) {
    uint64_t c[4];
    for (int k = 0; k < 4; ++k) {
      __builtin_memcpy(&c[k], kExpand8[(mask >> (8 * k)) & 0xff].data(), 8);
    }
    // Mask byte k's kept values start at rank 4k; 0x80 + 12 still has the zeroing bit set.
    const __m256i ctrl = _mm256_add_epi8(
        _mm256_setr_epi64x(static_cast<int64_t>(c[0]), static_cast<int64_t>(c[1]),
                           static_cast<int64_t>(c[2]), static_cast<int64_t>(c[3])),
        _mm256_setr_epi64x(0, 0x0404040404040404, 0x0808080808080808, 0x0c0c0c0c0c0c0c0c));
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(kept), ctrl);
  }
  // |pair sums| <= 2 * 128 * 127: maddubs does not saturate.
  static __m256i dot_s8s8(__m256i w, __m256i q) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(q, w)),
                             _mm256_set1_epi16(1));
  }
};

}  // namespace

namespace avx2 {

float f16_2of4_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK2of4 == 0);
  const auto* b = static_cast<const BlockF16_2of4*>(row);
  const auto* xf = static_cast<const float*>(x);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  for (int64_t i = 0; i < n / kQK2of4; ++i) {
    const uint32_t m = load_mask32(b[i].mask);
    for (int k = 0; k < 4; ++k) {  // 8 weights, 4 kept f16 values, per step
      const __m128i kept = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[i].v + 4 * k));
      const __m128i ctrl = _mm_loadu_si128(
          reinterpret_cast<const __m128i*>(kExpand16[(m >> (8 * k)) & 0xff].data()));
      const __m256 w = _mm256_cvtph_ps(_mm_shuffle_epi8(kept, ctrl));
      acc[k] = _mm256_fmadd_ps(w, _mm256_loadu_ps(xf + i * kQK2of4 + 8 * k), acc[k]);
    }
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

float q8_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK2of4 == 0);
  return q8_0_2of4_vec_dot_body<Avx2Shuffle>(static_cast<const BlockQ8_0_2of4*>(row),
                                             static_cast<const BlockQ8_0*>(x), n / kQK2of4);
}

float q4_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK4_0_2of4 == 0);
  return q4_0_2of4_vec_dot_body<Avx2Shuffle>(static_cast<const BlockQ4_0_2of4*>(row),
                                             static_cast<const BlockQ8_0*>(x), n / kQK4_0_2of4);
}

}  // namespace avx2
}  // namespace tessera::kernels
