// AVX-512 2:4 vec_dots (compiled with the AVX-512 set and -ffp-contract=off; see
// CMakeLists.txt). Kept values go back to their dense positions by one masked byte shuffle
// (int8) or word permute (f16) whose control comes from the block's keep-mask; the rest is the
// dense dot.
// GCC 12 reports its own headers' undefined-register idiom (__Y) as maybe-uninitialized here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "tessera/base/check.h"
#include "tessera/kernels/sparse_quants.h"
#include "x86_sparse_quants.h"

namespace tessera::kernels {
namespace {

// Measured on this Zen 4 host: vpexpandb/vpexpandw placed values at well under the dense
// kernels' rate (f16_2of4 3.5 G weights/s against 9.4 for the pshufb version, one core, data in
// cache), so the kept values are placed by a byte shuffle whose control is computed from the
// mask in registers instead: each position's rank among its group's kept values (a prefix sum
// inside each 4-byte lane) plus twice its group's index, the pruned positions zeroed by the
// shuffle's write mask.
struct Avx512Shuffle {
  static __m256i expand_bytes(__m128i kept, uint32_t mask) {
    const __m256i v = _mm256_maskz_mov_epi8(mask, _mm256_set1_epi8(1));  // 1 where kept
    __m256i p = _mm256_add_epi8(v, _mm256_slli_epi32(v, 8));
    p = _mm256_add_epi8(p, _mm256_slli_epi32(p, 16));  // inclusive prefix sums per group
    const __m256i base = _mm256_setr_epi8(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6,
                                          8, 8, 8, 8, 10, 10, 10, 10, 12, 12, 12, 12, 14, 14, 14, 14);
    const __m256i ctrl = _mm256_add_epi8(_mm256_sub_epi8(p, v), base);
    return _mm256_maskz_shuffle_epi8(mask, _mm256_broadcastsi128_si256(kept), ctrl);
  }
  // |w| (unsigned) times q with w's sign, by vpdpbusd; |w| <= 128 and |q| <= 127 for Q8_0.
  static __m256i dot_s8s8(__m256i w, __m256i q) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(w), _mm256_sign_epi8(q, w));
  }
};

// The 32 f16 weights of an F16_2of4 block in position order, zeros where pruned (as above, in
// 16-bit lanes: the ranks are prefix sums inside each 64-bit lane).
__m512i expand_f16(const BlockF16_2of4& b) {
  const uint32_t mask = load_mask32(b.mask);
  const __m512i v = _mm512_maskz_mov_epi16(mask, _mm512_set1_epi16(1));
  __m512i p = _mm512_add_epi16(v, _mm512_slli_epi64(v, 16));
  p = _mm512_add_epi16(p, _mm512_slli_epi64(p, 32));
  const __m512i base = _mm512_set_epi16(14, 14, 14, 14, 12, 12, 12, 12, 10, 10, 10, 10, 8, 8, 8, 8,
                                        6, 6, 6, 6, 4, 4, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0);
  const __m512i idx = _mm512_add_epi16(_mm512_sub_epi16(p, v), base);
  const __m256i kept = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.v));
  return _mm512_maskz_permutexvar_epi16(mask, idx, _mm512_zextsi256_si512(kept));
}

// Two 32-weight halves at once: `lo` and `hi` (16 kept int8 each) placed at the set bits of
// the low and high 32 bits of `mask` in one register (the 256-bit expand_bytes twice over).
__m512i expand_bytes_x2(__m128i lo, __m128i hi, uint64_t mask) {
  const __m512i v = _mm512_maskz_mov_epi8(mask, _mm512_set1_epi8(1));
  __m512i p = _mm512_add_epi8(v, _mm512_slli_epi32(v, 8));
  p = _mm512_add_epi8(p, _mm512_slli_epi32(p, 16));
  const __m512i base = _mm512_set_epi8(
      14, 14, 14, 14, 12, 12, 12, 12, 10, 10, 10, 10, 8, 8, 8, 8, 6, 6, 6, 6, 4, 4, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0,
      14, 14, 14, 14, 12, 12, 12, 12, 10, 10, 10, 10, 8, 8, 8, 8, 6, 6, 6, 6, 4, 4, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0);
  const __m512i ctrl = _mm512_add_epi8(_mm512_sub_epi8(p, v), base);
  const __m512i kept = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_broadcastsi128_si256(lo)), _mm256_broadcastsi128_si256(hi), 1);
  return _mm512_maskz_shuffle_epi8(mask, kept, ctrl);
}

// 16 int32 lanes summing (per 256-bit half) to the signed dot of w and a: |w| on vpdpbusd's
// unsigned side, w's sign moved onto a (|a| <= 127 for Q8_0 activations).
__m512i i8_dot_x2(__m512i w, __m512i a) {
  const __m512i signed_a =
      _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), signed_a);
}

__m512i load_q8_0_x2(const BlockQ8_0* a) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[0].qs))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[1].qs)), 1);
}

__m512 scales_x2(float d0, float d1) {
  return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(d0), _mm512_set1_ps(d1));
}

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
    const __m512i h = expand_f16(b[i]);
    acc0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(h)),
                           _mm512_loadu_ps(xf + i * kQK2of4), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)),
                           _mm512_loadu_ps(xf + i * kQK2of4 + 16), acc1);
  }
  return hsum512(_mm512_add_ps(acc0, acc1));
}

// Two blocks per step into one float accumulator (the dense Q8_0 kernel's shape): within f32
// rounding of the scalar reference, not bit for bit (the AVX2 kernel is); the bit-identical
// group-of-four body measured 2x slower here, compute-bound below the memory bandwidth.
float q8_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK2of4 == 0);
  const auto* w = static_cast<const BlockQ8_0_2of4*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  const int64_t nb = n / kQK2of4;
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    const uint64_t m = load_mask32(w[i].mask) | uint64_t{load_mask32(w[i + 1].mask)} << 32;
    const __m512i wq = expand_bytes_x2(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].qs)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i + 1].qs)), m);
    const __m512i dot = i8_dot_x2(wq, load_q8_0_x2(a + i));
    const __m512 d = scales_x2(_cvtsh_ss(w[i].d) * _cvtsh_ss(a[i].d),
                               _cvtsh_ss(w[i + 1].d) * _cvtsh_ss(a[i + 1].d));
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot), acc);
  }
  float sum = hsum512(acc);
  if (i < nb) sum += q8_0_2of4_vec_dot_body<Avx512Shuffle>(w + i, a + i, nb - i);
  return sum;
}

// One 64-weight block per step: its low nibbles (first 32 weights) and high nibbles (last 32)
// expanded into one register against two activation blocks. Numerics as above.
float q4_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK4_0_2of4 == 0);
  const auto* w = static_cast<const BlockQ4_0_2of4*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n / kQK4_0_2of4; ++i) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i].qs));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low4), eight);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low4), eight);
    const __m512i wq = expand_bytes_x2(lo, hi, load_mask64(w[i].mask));
    const __m512i dot = i8_dot_x2(wq, load_q8_0_x2(a + 2 * i));
    const float dw = _cvtsh_ss(w[i].d);
    const __m512 d = scales_x2(dw * _cvtsh_ss(a[2 * i].d), dw * _cvtsh_ss(a[2 * i + 1].d));
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot), acc);
  }
  return hsum512(acc);
}

}  // namespace avx512
}  // namespace tessera::kernels
