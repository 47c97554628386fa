// The Q4_1 / Q5_0 / Q5_1 x Q8_0 vec_dot bodies shared by the AVX2 and AVX-512 translation units,
// parameterized by how 32 unsigned bytes meet 32 signed ones (`Dot::u8s8`: maddubs + madd on AVX2,
// vpdpbusd on AVX-512 VNNI; `Dot::acc(c, u, s)` = c + u8s8(u, s), one vpdpbusd with VNNI), and
// their tiles' block formats (x86_tile32.h). Not a public header: each including file gets its own internal copy
// compiled with its own flags, so the linker never merges a wide body into baseline code.
//
// Blocks go four at a time: their integer sums are reduced together by a hadd tree, and the float
// steps of legacy_quants.h run lane-wise (one lane per block) before the per-block results are
// added to the running sum in block order, so results equal the scalar references bit for bit
// (the including file must be compiled with -ffp-contract=off).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/legacy_quant_blocks.h"
#include "tessera/kernels/quant_blocks.h"
#include "x86_tile32.h"

namespace tessera::kernels {
namespace {

constexpr int kGroup = 4;  // blocks reduced together

// Levels of a block's nibbles in element order (low nibbles are elements 0-15, the low lane).
__m256i nibble_levels(const uint8_t* qs) {
  const __m128i p = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(p, 4), p), _mm256_set1_epi8(0x0f));
}

// 0x10 in byte e where bit e of the little-endian word qh is set, else 0.
__m256i fifth_bits(const uint8_t* qh) {
  int32_t word;
  __builtin_memcpy(&word, qh, 4);
  // Byte e takes qh byte e / 8 (both 128-bit lanes hold the whole word), then tests its bit e % 8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(word),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                       2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

__m256i load32(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// [sum of v0, sum of v1, sum of v2, sum of v3] (8 int32 lanes each).
__m128i reduce4(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// Four f16 values at p, p + stride, ... (bytes) as floats; the first `count` only, the rest 0.
__m128 load_f16x4(const void* p, size_t stride, int count) {
  uint16_t h[4] = {0, 0, 0, 0};
  const auto* b = static_cast<const uint8_t*>(p);
  for (int k = 0; k < count; ++k) __builtin_memcpy(&h[k], b + k * stride, 2);
  int64_t packed;
  __builtin_memcpy(&packed, h, 8);
  return _mm_cvtph_ps(_mm_cvtsi64_si128(packed));
}

// sum += lanes 0 .. count-1 of v, in lane order.
float add_in_order(float sum, __m128 v, int count) {
  alignas(16) float t[4];
  _mm_store_ps(t, v);
  for (int k = 0; k < count; ++k) sum += t[k];
  return sum;
}

template <class Dot>
float q5_0_vec_dot_body(const BlockQ5_0* w, const BlockQ8_0* a, int64_t nb) {
  const __m256i sixteen = _mm256_set1_epi8(16);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i += kGroup) {
    const int count = nb - i < kGroup ? static_cast<int>(nb - i) : kGroup;
    __m256i v[kGroup];
    for (int k = 0; k < kGroup; ++k) {
      if (k >= count) {
        v[k] = _mm256_setzero_si256();
        continue;
      }
      const __m256i l = _mm256_or_si256(nibble_levels(w[i + k].qs), fifth_bits(w[i + k].qh));
      const __m256i q = load32(a[i + k].qs);
      v[k] = _mm256_sub_epi32(Dot::u8s8(l, q), Dot::u8s8(sixteen, q));  // (l - 16) . q
    }
    const __m128 s = _mm_cvtepi32_ps(reduce4(v[0], v[1], v[2], v[3]));
    const __m128 dw = load_f16x4(&w[i].d, sizeof(BlockQ5_0), count);
    const __m128 dx = load_f16x4(&a[i].d, sizeof(BlockQ8_0), count);
    sum = add_in_order(sum, _mm_mul_ps(_mm_mul_ps(dw, dx), s), count);
  }
  return sum;
}

// Q4_1 (kFiveBits false) and Q5_1 (true).
template <class Dot, class Block, bool kFiveBits>
float affine_vec_dot_body(const Block* w, const BlockQ8_0* a, int64_t nb) {
  const __m256i ones = _mm256_set1_epi8(1);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i += kGroup) {
    const int count = nb - i < kGroup ? static_cast<int>(nb - i) : kGroup;
    __m256i s[kGroup], t[kGroup];
    for (int k = 0; k < kGroup; ++k) {
      if (k >= count) {
        s[k] = t[k] = _mm256_setzero_si256();
        continue;
      }
      __m256i l = nibble_levels(w[i + k].qs);
      if constexpr (kFiveBits) l = _mm256_or_si256(l, fifth_bits(w[i + k].qh));
      const __m256i q = load32(a[i + k].qs);
      s[k] = Dot::u8s8(l, q);
      t[k] = Dot::u8s8(ones, q);
    }
    const __m128 sf = _mm_cvtepi32_ps(reduce4(s[0], s[1], s[2], s[3]));
    const __m128 tf = _mm_cvtepi32_ps(reduce4(t[0], t[1], t[2], t[3]));
    const __m128 dw = load_f16x4(&w[i].d, sizeof(Block), count);
    const __m128 mw = load_f16x4(&w[i].m, sizeof(Block), count);
    const __m128 dx = load_f16x4(&a[i].d, sizeof(BlockQ8_0), count);
    const __m128 block =
        _mm_add_ps(_mm_mul_ps(_mm_mul_ps(dw, dx), sf), _mm_mul_ps(_mm_mul_ps(mw, dx), tf));
    sum = add_in_order(sum, block, count);
  }
  return sum;
}

// ---- Tile formats (x86_tile32.h) -------------------------------------------------------------

// Q5_0: the tokens' -16 * sum(a) is formed once per token and block and starts each output's
// accumulator, so per (row, token) one Dot::acc gives s - 16 t.
template <class Dot>
struct Q5_0Format {
  using Block = BlockQ5_0;
  static constexpr bool kAffine = false;
  struct Weight {
    __m256i l;  // levels 0..31
  };
  struct Act {
    __m256i q, start;
  };
  static Weight weight(const Block& b) {
    return {_mm256_or_si256(nibble_levels(b.qs), fifth_bits(b.qh))};
  }
  static Act act(const BlockQ8_0& a) {
    const __m256i q = load32(a.qs);
    return {q, _mm256_sub_epi32(_mm256_setzero_si256(), Dot::u8s8(_mm256_set1_epi8(16), q))};
  }
  static __m256i dot(const Weight& w, const Act& a) { return Dot::acc(a.start, w.l, a.q); }
};

// Q4_1 (kFiveBits false) and Q5_1 (true): s = sum l * a per (row, token), t = sum a per token.
template <class Dot, class B, bool kFiveBits>
struct AffineFormat {
  using Block = B;
  static constexpr bool kAffine = true;
  struct Weight {
    __m256i l;
  };
  struct Act {
    __m256i q;
  };
  static Weight weight(const Block& b) {
    __m256i l = nibble_levels(b.qs);
    if constexpr (kFiveBits) l = _mm256_or_si256(l, fifth_bits(b.qh));
    return {l};
  }
  static Act act(const BlockQ8_0& a) { return {load32(a.qs)}; }
  static __m256i quant_sum(const Act& a) { return Dot::u8s8(_mm256_set1_epi8(1), a.q); }
  static __m256i dot(const Weight& w, const Act& a) { return Dot::u8s8(w.l, a.q); }
};

template <class Dot>
using Q4_1Format = AffineFormat<Dot, BlockQ4_1, false>;
template <class Dot>
using Q5_1Format = AffineFormat<Dot, BlockQ5_1, true>;

}  // namespace
}  // namespace tessera::kernels
