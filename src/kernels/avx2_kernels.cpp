// AVX2/FMA/F16C kernels. This file is compiled with -mavx2 -mfma -mf16c -ffp-contract=off (see
// CMakeLists.txt); nothing else in the binary is, and install_avx2_rows only runs after CPUID said
// yes. Two rules keep that safe and exact:
//   - No inline functions or templates shared with other translation units (half.h, <algorithm>,
//     std containers) are used here: the linker may keep any one copy of such a function, and an
//     AVX2 copy would then run on CPUs without AVX2. Helpers live in the anonymous namespace.
//   - -ffp-contract=off, because GCC contracts the vector operators behind _mm256_mul_ps and
//     _mm256_sub_ps into FMAs, which would change the rounding of x * id in the quantizer.
#include "tessera/kernels/avx2_kernels.h"
#include "tessera/kernels/avx2_packed.h"

#include <immintrin.h>

#include "avx2_exp.h"
#include "tessera/kernels/avx2_packed.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/scalar_kernels.h"

namespace tessera::kernels {
namespace {

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

float f16_scale(uint16_t h) { return _cvtsh_ss(h); }

__m256 load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

__m256 load_bf16(const uint16_t* p) {
  const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

// 8 int8 at p as floats.
__m256 load_i8_ps(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// The 32 quants of a Q4_0 block as int8 in [-8, 7], in element order: low nibbles (elements
// 0..15) in the low 128-bit lane, high nibbles (16..31) in the high lane.
__m256i q4_0_bytes(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_sub_epi8(_mm256_and_si256(both, _mm256_set1_epi8(0x0f)), _mm256_set1_epi8(8));
}

// Eight partial sums (as floats) of the int8 dot product of w and a, exact: |w| goes to the
// unsigned side of maddubs and w's sign moves onto a. Needs a != -128 (see the header).
__m256 i8_dot_ps(__m256i w, __m256i a) {
  const __m256i abs_w = _mm256_sign_epi8(w, w);
  const __m256i signed_a = _mm256_sign_epi8(a, w);
  const __m256i pairs = _mm256_maddubs_epi16(abs_w, signed_a);  // |sum| <= 2*128*127: no saturation
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// Rounds to the nearest integer with ties away from zero, as std::lround (the scalar quantizer's
// rounding); _mm256_round_ps only offers ties-to-even. v - trunc(v) is exact for |v| < 2^23.
__m256 round_half_away(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
  const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, sign));
  return _mm256_add_ps(t, _mm256_and_ps(up, one));
}

// Q8_0 block x f32: returns acc + d * (q . x) lane-wise.
__m256 q8_0_block_f32(const BlockQ8_0& b, const float* x, __m256 acc) {
  __m256 s = _mm256_mul_ps(load_i8_ps(b.qs), _mm256_loadu_ps(x));
  s = _mm256_fmadd_ps(load_i8_ps(b.qs + 8), _mm256_loadu_ps(x + 8), s);
  s = _mm256_fmadd_ps(load_i8_ps(b.qs + 16), _mm256_loadu_ps(x + 16), s);
  s = _mm256_fmadd_ps(load_i8_ps(b.qs + 24), _mm256_loadu_ps(x + 24), s);
  return _mm256_fmadd_ps(_mm256_set1_ps(f16_scale(b.d)), s, acc);
}

// Q4_0 block x f32: returns acc + d * ((q - 8) . x) lane-wise.
__m256 q4_0_block_f32(const BlockQ4_0& b, const float* x, __m256 acc) {
  const __m256i q = q4_0_bytes(b.qs);
  const __m128i lo = _mm256_castsi256_si128(q);
  const __m128i hi = _mm256_extracti128_si256(q, 1);
  __m256 s = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), _mm256_loadu_ps(x));
  s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))),
                      _mm256_loadu_ps(x + 8), s);
  s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), _mm256_loadu_ps(x + 16), s);
  s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))),
                      _mm256_loadu_ps(x + 24), s);
  return _mm256_fmadd_ps(_mm256_set1_ps(f16_scale(b.d)), s, acc);
}

__m256 q8_0_q8_0_block(const BlockQ8_0& w, const BlockQ8_0& a, __m256 acc) {
  const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs));
  const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
  const __m256 d = _mm256_set1_ps(f16_scale(w.d) * f16_scale(a.d));
  return _mm256_fmadd_ps(d, i8_dot_ps(qw, qa), acc);
}

__m256 q4_0_q8_0_block(const BlockQ4_0& w, const BlockQ8_0& a, __m256 acc) {
  const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
  const __m256 d = _mm256_set1_ps(f16_scale(w.d) * f16_scale(a.d));
  return _mm256_fmadd_ps(d, i8_dot_ps(q4_0_bytes(w.qs), qa), acc);
}

DTypeKernels& row_of(KernelTable& t, DType d) { return t.dtypes[dtype_slot(d)]; }

}  // namespace

namespace avx2 {

// ---- F32 ------------------------------------------------------------------------------------

float f32_dot(const void* row, const float* x, int64_t n) {
  const float* w = static_cast<const float*>(row);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), acc0);
  const float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  return sum + scalar::f32_dot(w + i, x + i, n - i);
}

float f32_vec_dot(const void* row, const void* x, int64_t n) {
  return f32_dot(row, static_cast<const float*>(x), n);
}

// ---- F16 ------------------------------------------------------------------------------------

void f16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_f16(h + i));
  scalar::f16_to_float(h + i, dst + i, n - i);
}

void f16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      // F16C keeps NaN payload bits; the reference writes the canonical quiet NaN. Rare: defer.
      scalar::f16_from_float(src + i, h + i, 8);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  scalar::f16_from_float(src + i, h + i, n - i);
}

float f16_dot(const void* row, const float* x, int64_t n) {
  const uint16_t* w = static_cast<const uint16_t*>(row);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(load_f16(w + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(load_f16(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load_f16(w + i + 16), _mm256_loadu_ps(x + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load_f16(w + i + 24), _mm256_loadu_ps(x + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_f16(w + i), _mm256_loadu_ps(x + i), acc0);
  const float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  return sum + scalar::f16_dot(w + i, x + i, n - i);
}

float f16_vec_dot(const void* row, const void* x, int64_t n) {
  return f16_dot(row, static_cast<const float*>(x), n);
}

// ---- BF16 -----------------------------------------------------------------------------------

void bf16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_bf16(h + i));
  scalar::bf16_to_float(h + i, dst + i, n - i);
}

void bf16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + i));
    const __m256i high = _mm256_srli_epi32(x, 16);
    // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate.
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(high, one))), 16);
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), is_nan);
    // Values fit in 16 bits, so the saturating pack is a plain narrowing; it interleaves lanes,
    // and the permute puts the two 64-bit halves holding the results side by side.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), _mm256_castsi256_si128(packed));
  }
  scalar::bf16_from_float(src + i, h + i, n - i);
}

float bf16_dot(const void* row, const float* x, int64_t n) {
  const uint16_t* w = static_cast<const uint16_t*>(row);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(load_bf16(w + i), _mm256_loadu_ps(x + i), acc0);
    acc1 = _mm256_fmadd_ps(load_bf16(w + i + 8), _mm256_loadu_ps(x + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load_bf16(w + i + 16), _mm256_loadu_ps(x + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load_bf16(w + i + 24), _mm256_loadu_ps(x + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_bf16(w + i), _mm256_loadu_ps(x + i), acc0);
  const float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  return sum + scalar::bf16_dot(w + i, x + i, n - i);
}

float bf16_vec_dot(const void* row, const void* x, int64_t n) {
  return bf16_dot(row, static_cast<const float*>(x), n);
}

// ---- Q8_0 -----------------------------------------------------------------------------------
// Block formats have no element tail (n is a multiple of 32); an odd last block runs the same
// one-block code as the unrolled loop.

void q8_0_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const __m256 d = _mm256_set1_ps(f16_scale(b[i].d));
    float* out = dst + i * kQK8_0;
    for (int j = 0; j < kQK8_0; j += 8) _mm256_storeu_ps(out + j, _mm256_mul_ps(d, load_i8_ps(b[i].qs + j)));
  }
}

void q8_0_from_float(const float* src, void* dst, int64_t n) {
  BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float* x = src + i * kQK8_0;
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    // max(|v|, acc) with |v| first: a NaN lane yields acc, so NaNs are skipped as std::max does.
    __m256 m = _mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_setzero_ps());
    m = _mm256_max_ps(_mm256_andnot_ps(sign, v1), m);
    m = _mm256_max_ps(_mm256_andnot_ps(sign, v2), m);
    m = _mm256_max_ps(_mm256_andnot_ps(sign, v3), m);
    const float d = hmax(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i q0 = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v0, vid)));
    const __m256i q1 = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v1, vid)));
    const __m256i q2 = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v2, vid)));
    const __m256i q3 = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v3, vid)));
    // The packs work within 128-bit lanes, leaving 4-quant groups in the order q0[0:4] q1[0:4]
    // q2[0:4] q3[0:4] q0[4:8] q1[4:8] ...; the permute restores element order.
    const __m256i q = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[i].qs), _mm256_permutevar8x32_epi32(q, order));
  }
}

float q8_0_dot(const void* row, const float* x, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(row);
  const int64_t nb = n / kQK8_0;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    acc0 = q8_0_block_f32(b[i], x + i * kQK8_0, acc0);
    acc1 = q8_0_block_f32(b[i + 1], x + (i + 1) * kQK8_0, acc1);
  }
  if (i < nb) acc0 = q8_0_block_f32(b[i], x + i * kQK8_0, acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

float q8_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  const BlockQ8_0* w = static_cast<const BlockQ8_0*>(row);
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(x);
  const int64_t nb = n / kQK8_0;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    acc0 = q8_0_q8_0_block(w[i], a[i], acc0);
    acc1 = q8_0_q8_0_block(w[i + 1], a[i + 1], acc1);
  }
  if (i < nb) acc0 = q8_0_q8_0_block(w[i], a[i], acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

// ---- Q4_0 -----------------------------------------------------------------------------------

void q4_0_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const __m256 d = _mm256_set1_ps(f16_scale(b[i].d));
    const __m256i q = q4_0_bytes(b[i].qs);
    const __m128i lo = _mm256_castsi256_si128(q);
    const __m128i hi = _mm256_extracti128_si256(q, 1);
    float* out = dst + i * kQK4_0;
    _mm256_storeu_ps(out, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo))));
    _mm256_storeu_ps(out + 8,
                     _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))));
    _mm256_storeu_ps(out + 16, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))));
    _mm256_storeu_ps(out + 24,
                     _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))));
  }
}

float q4_0_dot(const void* row, const float* x, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(row);
  const int64_t nb = n / kQK4_0;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    acc0 = q4_0_block_f32(b[i], x + i * kQK4_0, acc0);
    acc1 = q4_0_block_f32(b[i + 1], x + (i + 1) * kQK4_0, acc1);
  }
  if (i < nb) acc0 = q4_0_block_f32(b[i], x + i * kQK4_0, acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

float q4_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  const BlockQ4_0* w = static_cast<const BlockQ4_0*>(row);
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(x);
  const int64_t nb = n / kQK4_0;
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    acc0 = q4_0_q8_0_block(w[i], a[i], acc0);
    acc1 = q4_0_q8_0_block(w[i + 1], a[i + 1], acc1);
  }
  if (i < nb) acc0 = q4_0_q8_0_block(w[i], a[i], acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

void axpy(float a, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 p0 = _mm256_mul_ps(va, _mm256_loadu_ps(x + i));
    const __m256 p1 = _mm256_mul_ps(va, _mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), p0));
    _mm256_storeu_ps(y + i + 8, _mm256_add_ps(_mm256_loadu_ps(y + i + 8), p1));
  }
  for (; i < n; ++i) {
    const float p = a * x[i];
    y[i] += p;
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 neg_g = _mm256_xor_ps(g, sign);
    // e^-g overflows past 88: infinity there, so g / (1 + e^-g) is -0 as with std::exp.
    const __m256 e = _mm256_blendv_ps(exp_clamped(neg_g), inf,
                                      _mm256_cmp_ps(neg_g, _mm256_set1_ps(88.0f), _CMP_GT_OQ));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  if (i < n) scalar::silu_mul(gate + i, up + i, n - i);
}

}  // namespace avx2

void install_avx2_rows(KernelTable& t) {
  t.attention_row = avx2::attention_row;
  t.attention_rows = avx2::attention_rows;
  t.silu_mul = avx2::silu_mul;
  t.axpy = avx2::axpy;
  t.fixed_dot = [](const float* a, const float* b, int64_t n) { return avx2::f32_dot(a, b, n); };
  t.q4_0x16_gemm = avx2::q4_0x16_q8_0_gemm;  // the packed layouts (avx2_packed.h)
  t.q4_kx16_gemm = avx2::q4_kx16_q8_k_gemm;
  t.q8_0x16_gemm = avx2::q8_0x16_q8_0_gemm;
  t.f16x16_gemm = avx2::f16x16_f32_gemm;
  t.iq4_nlx16_gemm = avx2::iq4_nlx16_q8_0_gemm;
  t.q4_1x16_gemm = avx2::q4_1x16_q8_0_gemm;
  t.q5_0x16_gemm = avx2::q5_0x16_q8_0_gemm;
  t.q5_1x16_gemm = avx2::q5_1x16_q8_0_gemm;
  t.q8_0_2of4x16_gemm = avx2::q8_0_2of4x16_q8_0_gemm;
  t.q2_kx16_gemm = avx2::q2_kx16_q8_k_gemm;
  t.q6_kx16_gemm = avx2::q6_kx16_q8_k_gemm;
  t.f16_2of4x16_gemm = avx2::f16_2of4x16_f32_gemm;
  DTypeKernels& f32 = row_of(t, DType::kF32);
  f32.dot = avx2::f32_dot;  // to_float/from_float stay memcpy, already optimal
  f32.vec_dot = avx2::f32_vec_dot;

  DTypeKernels& f16 = row_of(t, DType::kF16);
  f16.to_float = avx2::f16_to_float;
  f16.from_float = avx2::f16_from_float;
  f16.dot = avx2::f16_dot;
  f16.vec_dot = avx2::f16_vec_dot;

  DTypeKernels& bf16 = row_of(t, DType::kBF16);
  bf16.to_float = avx2::bf16_to_float;
  bf16.from_float = avx2::bf16_from_float;
  bf16.dot = avx2::bf16_dot;
  bf16.vec_dot = avx2::bf16_vec_dot;

  DTypeKernels& q8 = row_of(t, DType::kQ8_0);
  q8.to_float = avx2::q8_0_to_float;
  q8.from_float = avx2::q8_0_from_float;
  q8.dot = avx2::q8_0_dot;
  q8.vec_dot = avx2::q8_0_q8_0_vec_dot;

  DTypeKernels& q4 = row_of(t, DType::kQ4_0);
  q4.to_float = avx2::q4_0_to_float;  // from_float (offline weight quantization) stays scalar
  q4.dot = avx2::q4_0_dot;
  q4.vec_dot = avx2::q4_0_q8_0_vec_dot;
  // No AVX2 tile yet: the scalar tile would be ~15x slower than AVX2 vec_dot per output.
  q4.vec_dot_tile = nullptr;
}

}  // namespace tessera::kernels
