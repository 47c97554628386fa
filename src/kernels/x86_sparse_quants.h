// The 2:4 vec_dot bodies shared by the AVX2 and AVX-512 translation units (sparse_quants.h),
// parameterized by an `Isa` policy with
//   expand_bytes(kept16, mask32): 32 bytes, the 16 kept int8 at the set bits of mask32, else 0;
//   dot_s8s8(w, q):              8 int32 lanes summing to sum_j w_j * q_j (32 signed bytes each).
// AVX2 places with pshufb from a table of masks; AVX-512 with a masked shuffle whose control it
// computes (used for an odd last block; its main loop is its own). Not a public header:
// each including file gets its own internal copy compiled with its own flags.
//
// Integer blocks go four at a time through the helpers of x86_legacy_quants.h (hadd tree, then
// lane-wise float steps and an in-order add), so results equal the scalar references bit for bit
// (the including file must be compiled with -ffp-contract=off).
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>

#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/sparse_blocks.h"
#include "x86_legacy_quants.h"

namespace tessera::kernels {
namespace {

// For a mask byte (two groups of 4 weights), the pshufb control placing kept values: byte p
// (p < 8) is the rank of weight p among the byte's kept weights (0..3), or 0x80 (zero) when
// pruned. `width` bytes per value: 1 (int8) or 2 (f16; then 16 control bytes).
template <int kWidth>
constexpr std::array<std::array<uint8_t, 8 * kWidth>, 256> make_expand_table() {
  std::array<std::array<uint8_t, 8 * kWidth>, 256> t{};
  for (int m = 0; m < 256; ++m) {
    int rank = 0;
    for (int p = 0; p < 8; ++p) {
      const bool kept = (m >> p) & 1;
      for (int b = 0; b < kWidth; ++b) {
        t[m][p * kWidth + b] = kept ? static_cast<uint8_t>(rank * kWidth + b) : uint8_t{0x80};
      }
      if (kept) ++rank;
    }
  }
  return t;
}

// Q8_0_2of4 x Q8_0, blocks in groups of 4 as in x86_legacy_quants.h.
template <class Isa>
float q8_0_2of4_vec_dot_body(const BlockQ8_0_2of4* w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i += kGroup) {
    const int count = nb - i < kGroup ? static_cast<int>(nb - i) : kGroup;
    __m256i v[kGroup];
    for (int k = 0; k < kGroup; ++k) {
      if (k >= count) {
        v[k] = _mm256_setzero_si256();
        continue;
      }
      const __m128i kept = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i + k].qs));
      v[k] = Isa::dot_s8s8(Isa::expand_bytes(kept, load_mask32(w[i + k].mask)),
                           load32(a[i + k].qs));
    }
    const __m128 s = _mm_cvtepi32_ps(reduce4(v[0], v[1], v[2], v[3]));
    const __m128 dw = load_f16x4(&w[i].d, sizeof(BlockQ8_0_2of4), count);
    const __m128 dx = load_f16x4(&a[i].d, sizeof(BlockQ8_0), count);
    sum = add_in_order(sum, _mm_mul_ps(_mm_mul_ps(dw, dx), s), count);
  }
  return sum;
}

// Q4_0_2of4 x Q8_0: weight blocks in pairs, i.e. 4 halves of 32 weights against 4 activation
// blocks; per weight block d * (d_x0 * s_0 + d_x1 * s_1), added in order.
template <class Isa>
float q4_0_2of4_vec_dot_body(const BlockQ4_0_2of4* w, const BlockQ8_0* a, int64_t nb) {
  const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i += 2) {
    const int count = nb - i < 2 ? 1 : 2;  // weight blocks in this step
    __m256i v[4];
    for (int k = 0; k < 2; ++k) {
      if (k >= count) {
        v[2 * k] = v[2 * k + 1] = _mm256_setzero_si256();
        continue;
      }
      const BlockQ4_0_2of4& b = w[i + k];
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
      const uint64_t m = load_mask64(b.mask);
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, low4), eight);  // q - 8, first 32
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), low4), eight);
      v[2 * k] = Isa::dot_s8s8(Isa::expand_bytes(lo, static_cast<uint32_t>(m)),
                               load32(a[2 * (i + k)].qs));
      v[2 * k + 1] = Isa::dot_s8s8(Isa::expand_bytes(hi, static_cast<uint32_t>(m >> 32)),
                                   load32(a[2 * (i + k) + 1].qs));
    }
    const __m128 s = _mm_cvtepi32_ps(reduce4(v[0], v[1], v[2], v[3]));
    const __m128 dx = load_f16x4(&a[2 * i].d, sizeof(BlockQ8_0), 2 * count);
    alignas(16) float p[4];
    _mm_store_ps(p, _mm_mul_ps(dx, s));
    for (int k = 0; k < count; ++k) {
      sum += _cvtsh_ss(w[i + k].d) * (p[2 * k] + p[2 * k + 1]);
    }
  }
  return sum;
}

}  // namespace
}  // namespace tessera::kernels
