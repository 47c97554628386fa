// AVX-512 kernels. Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni (plus the AVX2
// set) and -ffp-contract=off; the same two rules as avx2_kernels.cpp apply: no inline functions
// or templates shared with other translation units, and no contraction of vector mul/add.
//
// Block formats run two 32-element blocks per 512-bit register (block i in the low 256 bits,
// i + 1 in the high), one pair per step into a single accumulator (the tiles keep one accumulator
// per output in a register, 16 for a 4 x 4 tile; two per output spilled them to the stack: the
// Q8_0 tile measured 147 against 164 GFLOP/s at T64, docs/PERFORMANCE.md); an odd last block runs
// the 256-bit (AVX512VL) form.
#include "tessera/kernels/avx512_kernels.h"

// GCC 12 warns that the _mm512_undefined_* placeholders inside many AVX-512 intrinsics are
// used uninitialized: a false positive about the header's own code (GCC 13 no longer warns).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/scalar_kernels.h"

namespace tessera::kernels {
namespace {

float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hsum512(__m512 v) {
  return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v),
                               _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

float f16_scale(uint16_t h) { return _cvtsh_ss(h); }

__m512 load_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

__m512 load_bf16(const uint16_t* p) {
  const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

__m256i load256(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The quants of two consecutive Q8_0 blocks in one register.
__m512i load_q8_0_x2(const BlockQ8_0* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load256(b[0].qs)), load256(b[1].qs), 1);
}

// Lane-wise scale for two blocks: d0 in the low eight lanes, d1 in the high eight.
__m512 scales_x2(float d0, float d1) {
  return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(d0), _mm512_set1_ps(d1));
}

// Signed int8 dot product of w and a in 16 int32 lanes (each lane the sum of four products):
// |w| on vpdpbusd's unsigned side, w's sign moved onto a. Needs a != -128 (see the header).
__m512i i8_dot_x2(__m512i w, __m512i a) {
  const __m512i abs_w = _mm512_abs_epi8(w);
  const __m512i signed_a = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), abs_w, signed_a);
}

__m256i i8_dot(__m256i w, __m256i a) {
  const __m256i abs_w = _mm256_abs_epi8(w);
  const __m256i signed_a = _mm256_sign_epi8(a, w);
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), abs_w, signed_a);
}

// Unsigned quants (0..15) of two Q4_0 blocks, in element order within each 256-bit half.
__m512i q4_0_nibbles_x2(const BlockQ4_0* b) {
  const __m256i packed = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs)));
  // 128-bit lanes: [b0 bytes, b1 bytes, b0 bytes >> 4, b1 bytes >> 4] -> [b0 lo, b0 hi, b1 lo, b1 hi]
  const __m512i both =
      _mm512_inserti64x4(_mm512_castsi256_si512(packed), _mm256_srli_epi16(packed, 4), 1);
  const __m512i ordered = _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0));
  return _mm512_and_si512(ordered, _mm512_set1_epi8(0x0f));
}

__m256i q4_0_nibbles(const BlockQ4_0& b) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0f));
}

__m512 q8_0_q8_0_x2(const BlockQ8_0* w, const BlockQ8_0* a, __m512 acc) {
  const __m512i dot = i8_dot_x2(load_q8_0_x2(w), load_q8_0_x2(a));
  const __m512 d = scales_x2(f16_scale(w[0].d) * f16_scale(a[0].d), f16_scale(w[1].d) * f16_scale(a[1].d));
  return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot), acc);
}

// sum (q - 8) * a = sum q * a - sum 8 * a: both sides unsigned x signed, as vpdpbusd wants.
__m512 q4_0_q8_0_x2(const BlockQ4_0* w, const BlockQ8_0* a, __m512 acc) {
  const __m512i qa = load_q8_0_x2(a);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i qa8 = _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(8), qa);
  const __m512i dot = _mm512_sub_epi32(_mm512_dpbusd_epi32(zero, q4_0_nibbles_x2(w), qa), qa8);
  const __m512 d = scales_x2(f16_scale(w[0].d) * f16_scale(a[0].d), f16_scale(w[1].d) * f16_scale(a[1].d));
  return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot), acc);
}

// An R x T tile of Q4_0 rows against Q8_0 tokens (vec_dot_tile): per pair of blocks each row's
// nibbles and scales are unpacked once for all T tokens, and each token's quants, their
// 8 * sum term and scales are loaded once for all R rows. Every output is bit-identical to
// q4_0_q8_0_vec_dot: the same lane arithmetic (integer block dot, d_w * d_a per lane, one fma)
// into one accumulator in the same block-pair order, summed the same way. So a token's logits do
// not depend on how many tokens share the product (batch invariance: decode uses vec_dot, prefill
// and batched decode use tiles).
template <int R, int T>
void q4_0_q8_0_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x,
                    size_t x_row_bytes, float* y, int64_t y_stride, int64_t n) {
  const int64_t nb = n / kQK4_0;
  const __m512i zero = _mm512_setzero_si512();
  const __m512i eights = _mm512_set1_epi8(8);
  __m512 acc[R][T];  // R * T <= 16 registers: with one accumulator per output nothing spills
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    __m512i qa[T], qa8[T];
    __m512 da[T];
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes) + i;
      qa[t] = load_q8_0_x2(a);
      // The accumulator starts at -8 * sum(a): one vpdpbusd per output gives sum((q - 8) a).
      qa8[t] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, eights, qa[t]));
      da[t] = scales_x2(f16_scale(a[0].d), f16_scale(a[1].d));
    }
    for (int r = 0; r < R; ++r) {
      const BlockQ4_0* b = reinterpret_cast<const BlockQ4_0*>(w + r * w_row_bytes) + i;
      const __m512i q = q4_0_nibbles_x2(b);
      const __m512 dw = scales_x2(f16_scale(b[0].d), f16_scale(b[1].d));
      for (int t = 0; t < T; ++t) {
        const __m512i dot = _mm512_dpbusd_epi32(qa8[t], q, qa[t]);
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da[t]), _mm512_cvtepi32_ps(dot), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float sum = hsum512(acc[r][t]);
      if (i < nb) {  // odd last block: the 256-bit form
        const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(w + r * w_row_bytes)[i];
        const BlockQ8_0& a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[i];
        const __m256i qa = load256(a.qs);
        const __m256i z = _mm256_setzero_si256();
        const __m256i dot = _mm256_sub_epi32(_mm256_dpbusd_epi32(z, q4_0_nibbles(b), qa),
                                             _mm256_dpbusd_epi32(z, _mm256_set1_epi8(8), qa));
        sum += f16_scale(b.d) * f16_scale(a.d) * hsum256(_mm256_cvtepi32_ps(dot));
      }
      y[t * y_stride + r] = sum;
    }
  }
}

// An R x T tile of Q8_0 rows against Q8_0 tokens, bit-identical to q8_0_q8_0_vec_dot per output
// (same lane values, one accumulator, the same order; see q4_0_q8_0_tile). vpdpbusd
// wants one unsigned operand: each token's quants are offset to a + 128 (a sign-bit flip, once
// per token) and each row's accumulator starts at -128 * sum(w) (once per row), so per output
// the exact signed dot costs one vpdpbusd: sum((a + 128) w) - 128 sum(w) = sum(a w).
template <int R, int T>
void q8_0_q8_0_tile(const std::byte* w, size_t w_row_bytes, const std::byte* x,
                    size_t x_row_bytes, float* y, int64_t y_stride, int64_t n) {
  const int64_t nb = n / kQK8_0;
  const __m512i zero = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512 acc[R][T];  // R * T <= 16 registers: with one accumulator per output nothing spills
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    __m512i qa[T];
    __m512 da[T];
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes) + i;
      qa[t] = _mm512_xor_si512(load_q8_0_x2(a), flip);  // a + 128, as unsigned bytes
      da[t] = scales_x2(f16_scale(a[0].d), f16_scale(a[1].d));
    }
    for (int r = 0; r < R; ++r) {
      const BlockQ8_0* b = reinterpret_cast<const BlockQ8_0*>(w + r * w_row_bytes) + i;
      const __m512i q = load_q8_0_x2(b);
      const __m512i start = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, flip, q));
      const __m512 dw = scales_x2(f16_scale(b[0].d), f16_scale(b[1].d));
      for (int t = 0; t < T; ++t) {
        const __m512i dot = _mm512_dpbusd_epi32(start, qa[t], q);
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da[t]), _mm512_cvtepi32_ps(dot), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float sum = hsum512(acc[r][t]);
      if (i < nb) {  // odd last block: the 256-bit form
        const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(w + r * w_row_bytes)[i];
        const BlockQ8_0& a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[i];
        const __m256i dot = i8_dot(load256(b.qs), load256(a.qs));
        sum += f16_scale(b.d) * f16_scale(a.d) * hsum256(_mm256_cvtepi32_ps(dot));
      }
      y[t * y_stride + r] = sum;
    }
  }
}

template <int R>
void q8_0_q8_0_tile_rows(const std::byte* w, size_t w_row_bytes, const std::byte* x,
                         size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  switch (n_tokens) {
    case 1: q8_0_q8_0_tile<R, 1>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n); break;
    case 2: q8_0_q8_0_tile<R, 2>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n); break;
    case 3: q8_0_q8_0_tile<R, 3>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n); break;
    default: q8_0_q8_0_tile<R, 4>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n); break;
  }
}

template <int R>
void q4_0_q8_0_tile_rows(const std::byte* w, size_t w_row_bytes, const std::byte* x,
                         size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  switch (n_tokens) {
    case 1: q4_0_q8_0_tile<R, 1>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n); break;
    case 2: q4_0_q8_0_tile<R, 2>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n); break;
    case 3: q4_0_q8_0_tile<R, 3>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n); break;
    default: q4_0_q8_0_tile<R, 4>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n); break;
  }
}

// Elements to take with a masked load first so that the weight loads that follow are aligned to
// `align` bytes: a weight row streams from memory, and a 64-byte load that straddles two cache
// lines costs both (measured: f32 matvec from DRAM 1.5x slower at 16-byte alignment). Zero when
// the row is already aligned, too short, or not even element-aligned.
int64_t head_to_align(const void* p, size_t elem_bytes, size_t align, int64_t n) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  if (addr % elem_bytes != 0) return 0;
  const auto head = static_cast<int64_t>(((align - addr % align) % align) / elem_bytes);
  return head < n ? head : 0;
}

DTypeKernels& row_of(KernelTable& t, DType d) { return t.dtypes[dtype_slot(d)]; }

constexpr int kRowPrefetchBytes = 6912;

}  // namespace

namespace avx512 {

float f32_dot(const void* row, const float* x, int64_t n) {
  const float* w = static_cast<const float*>(row);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
  int64_t i = head_to_align(w, sizeof(float), 64, n);
  if (i > 0) {
    const __mmask16 m = static_cast<__mmask16>((1u << i) - 1);
    acc0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w), _mm512_maskz_loadu_ps(m, x));
  }
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), _mm512_loadu_ps(x + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 32), _mm512_loadu_ps(x + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 48), _mm512_loadu_ps(x + i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), acc0);
  const float sum = hsum512(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
  return sum + scalar::f32_dot(w + i, x + i, n - i);
}

float f16_dot(const void* row, const float* x, int64_t n) {
  const uint16_t* w = static_cast<const uint16_t*>(row);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
  int64_t i = head_to_align(w, sizeof(uint16_t), 32, n);
  if (i > 0) {
    const __mmask16 m = static_cast<__mmask16>((1u << i) - 1);
    acc0 = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w)), _mm512_maskz_loadu_ps(m, x));
  }
  for (; i + 64 <= n; i += 64) {
    // Decode streams rows from DRAM one after another: ask L2 for the lines kRowPrefetchBytes
    // ahead (past this row's end that is the next row's start). TinyLlama F16 tg16 13.3-13.9 vs
    // 11.2-12.0 tok/s without (alternating binaries); measured per format, not assumed (Q8_0).
    _mm_prefetch(reinterpret_cast<const char*>(w + i) + kRowPrefetchBytes, _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(w + i) + kRowPrefetchBytes + 64, _MM_HINT_T1);
    acc0 = _mm512_fmadd_ps(load_f16(w + i), _mm512_loadu_ps(x + i), acc0);
    acc1 = _mm512_fmadd_ps(load_f16(w + i + 16), _mm512_loadu_ps(x + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(load_f16(w + i + 32), _mm512_loadu_ps(x + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(load_f16(w + i + 48), _mm512_loadu_ps(x + i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(load_f16(w + i), _mm512_loadu_ps(x + i), acc0);
  const float sum = hsum512(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
  return sum + scalar::f16_dot(w + i, x + i, n - i);
}

float bf16_dot(const void* row, const float* x, int64_t n) {
  const uint16_t* w = static_cast<const uint16_t*>(row);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
  int64_t i = head_to_align(w, sizeof(uint16_t), 32, n);
  if (i > 0) {
    const __mmask16 m = static_cast<__mmask16>((1u << i) - 1);
    acc0 = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, w)), 16)), _mm512_maskz_loadu_ps(m, x));
  }
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(load_bf16(w + i), _mm512_loadu_ps(x + i), acc0);
    acc1 = _mm512_fmadd_ps(load_bf16(w + i + 16), _mm512_loadu_ps(x + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(load_bf16(w + i + 32), _mm512_loadu_ps(x + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(load_bf16(w + i + 48), _mm512_loadu_ps(x + i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(load_bf16(w + i), _mm512_loadu_ps(x + i), acc0);
  const float sum = hsum512(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
  return sum + scalar::bf16_dot(w + i, x + i, n - i);
}

float f32_vec_dot(const void* row, const void* x, int64_t n) {
  return f32_dot(row, static_cast<const float*>(x), n);
}
float f16_vec_dot(const void* row, const void* x, int64_t n) {
  return f16_dot(row, static_cast<const float*>(x), n);
}
float bf16_vec_dot(const void* row, const void* x, int64_t n) {
  return bf16_dot(row, static_cast<const float*>(x), n);
}

float q8_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  const BlockQ8_0* w = static_cast<const BlockQ8_0*>(row);
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(x);
  const int64_t nb = n / kQK8_0;
  // One accumulator, block pairs in order: the tile kernels keep one per output in a register
  // and must add in the same order to stay bit-identical.
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  // No software prefetch here: the f16_dot one made TinyLlama Q8_0 decode 2x slower (tg32 15.4-
  // 16.2 vs 28.3-29.9 tok/s, alternating binaries), the hardware prefetchers already keep up.
  for (; i + 2 <= nb; i += 2) acc = q8_0_q8_0_x2(w + i, a + i, acc);
  float sum = hsum512(acc);
  if (i < nb) {
    const __m256i dot = i8_dot(load256(w[i].qs), load256(a[i].qs));
    sum += f16_scale(w[i].d) * f16_scale(a[i].d) * hsum256(_mm256_cvtepi32_ps(dot));
  }
  return sum;
}

float q4_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  const BlockQ4_0* w = static_cast<const BlockQ4_0*>(row);
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(x);
  const int64_t nb = n / kQK4_0;
  __m512 acc = _mm512_setzero_ps();  // one accumulator, as in q8_0_q8_0_vec_dot
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) acc = q4_0_q8_0_x2(w + i, a + i, acc);
  float sum = hsum512(acc);
  if (i < nb) {
    const __m256i qa = load256(a[i].qs);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i dot = _mm256_sub_epi32(_mm256_dpbusd_epi32(zero, q4_0_nibbles(w[i]), qa),
                                         _mm256_dpbusd_epi32(zero, _mm256_set1_epi8(8), qa));
    sum += f16_scale(w[i].d) * f16_scale(a[i].d) * hsum256(_mm256_cvtepi32_ps(dot));
  }
  return sum;
}

void q4_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  const auto* wb = static_cast<const std::byte*>(w);
  const auto* xb = static_cast<const std::byte*>(x);
  switch (n_rows) {
    case 1: q4_0_q8_0_tile_rows<1>(wb, w_row_bytes, xb, x_row_bytes, n_tokens, y, y_stride, n); break;
    case 2: q4_0_q8_0_tile_rows<2>(wb, w_row_bytes, xb, x_row_bytes, n_tokens, y, y_stride, n); break;
    case 3: q4_0_q8_0_tile_rows<3>(wb, w_row_bytes, xb, x_row_bytes, n_tokens, y, y_stride, n); break;
    default: q4_0_q8_0_tile_rows<4>(wb, w_row_bytes, xb, x_row_bytes, n_tokens, y, y_stride, n); break;
  }
}

void q8_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  const auto* wb = static_cast<const std::byte*>(w);
  const auto* xb = static_cast<const std::byte*>(x);
  switch (n_rows) {
    case 1: q8_0_q8_0_tile_rows<1>(wb, w_row_bytes, xb, x_row_bytes, n_tokens, y, y_stride, n); break;
    case 2: q8_0_q8_0_tile_rows<2>(wb, w_row_bytes, xb, x_row_bytes, n_tokens, y, y_stride, n); break;
    case 3: q8_0_q8_0_tile_rows<3>(wb, w_row_bytes, xb, x_row_bytes, n_tokens, y, y_stride, n); break;
    default: q8_0_q8_0_tile_rows<4>(wb, w_row_bytes, xb, x_row_bytes, n_tokens, y, y_stride, n); break;
  }
}

}  // namespace avx512

void install_avx512_rows(KernelTable& t) {
  DTypeKernels& f32 = row_of(t, DType::kF32);
  f32.dot = avx512::f32_dot;
  f32.vec_dot = avx512::f32_vec_dot;
  DTypeKernels& f16 = row_of(t, DType::kF16);
  f16.dot = avx512::f16_dot;
  f16.vec_dot = avx512::f16_vec_dot;
  DTypeKernels& bf16 = row_of(t, DType::kBF16);
  bf16.dot = avx512::bf16_dot;
  bf16.vec_dot = avx512::bf16_vec_dot;
  row_of(t, DType::kQ8_0).vec_dot = avx512::q8_0_q8_0_vec_dot;
  row_of(t, DType::kQ8_0).vec_dot_tile = avx512::q8_0_q8_0_vec_dot_tile;
  row_of(t, DType::kQ4_0).vec_dot = avx512::q4_0_q8_0_vec_dot;
  row_of(t, DType::kQ4_0).vec_dot_tile = avx512::q4_0_q8_0_vec_dot_tile;
  t.q4_0x16_gemm = avx512::q4_0x16_q8_0_gemm;
  t.q4_kx16_gemm = avx512::q4_kx16_q8_k_gemm;
  t.q2_kx16_gemm = avx512::q2_kx16_q8_k_gemm;
  t.q6_kx16_gemm = avx512::q6_kx16_q8_k_gemm;
  t.f16_2of4x16_gemm = avx512::f16_2of4x16_f32_gemm;
  t.q8_0x16_gemm = avx512::q8_0x16_q8_0_gemm;
  t.iq4_nlx16_gemm = avx512::iq4_nlx16_q8_0_gemm;
  t.q4_1x16_gemm = avx512::q4_1x16_q8_0_gemm;
  t.q5_0x16_gemm = avx512::q5_0x16_q8_0_gemm;
  t.q5_1x16_gemm = avx512::q5_1x16_q8_0_gemm;
  t.f16x16_gemm = avx512::f16x16_f32_gemm;
  t.attention_rows = avx512::attention_rows;
}

}  // namespace tessera::kernels
