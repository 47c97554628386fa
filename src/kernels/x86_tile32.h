// The R x T tile (kernel_table.h's vec_dot_tile) of 32-value weight blocks against Q8_0 tokens,
// shared by the AVX2 and AVX-512 translation units of Q4_1, Q5_0, Q5_1 (x86_legacy_quants.h) and
// IQ4_NL (x86_iquants.h). Not a public header: each including file gets its own internal copy
// compiled with its own flags (as x86_legacy_quants.h).
//
// A `Format` says how one weight block meets one activation block:
//   Format::Weight w = Format::weight(block)     unpacked once per (row, block), for all T tokens
//   Format::Act a    = Format::act(q8_0 block)   loaded once per (token, block), for all R rows
//   __m256i Format::dot(w, a)                    8 int32 lanes summing to the block's exact
//                                                integer dot (the scalar reference's s)
//   Format::kAffine                              whether blocks add m * d_x * sum(a_x) (Q4_1,
//                                                Q5_1: the block's f16 minimum is `m`)
// Per (row, block) the T tokens' integer sums are reduced together into one vector (lane t for
// token t), and the scalar reference's float steps run lane-wise on it:
//   scaled: sum += (d * d_x) * float(s)          affine: sum += (d * d_x) * float(s) + (m * d_x) * float(t)
// one lane per token, blocks in order, so every output equals the scalar reference (and so the
// same ISA's vec_dot, itself bit-identical to it) bit for bit, whatever the tile's shape. The
// including file must be compiled with -ffp-contract=off.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/quant_blocks.h"
#include "x86_tile_dispatch.h"

namespace tessera::kernels {
namespace {

// Lane t (t < T) of the result = the sum of the eight int32 lanes of v[t]; the other lanes 0.
template <int T>
__m128i reduce_tokens(const __m256i* v) {
  const __m256i z = _mm256_setzero_si256();
  const __m256i v0 = v[0], v1 = T > 1 ? v[1] : z, v2 = T > 2 ? v[2] : z, v3 = T > 3 ? v[3] : z;
  // Per 128-bit lane: [v0 0+2, v1 0+2, v0 1+3, v1 1+3], then [v0, v1, v2, v3] partial sums.
  const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(v0, v1), _mm256_unpackhi_epi32(v0, v1));
  const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(v2, v3), _mm256_unpackhi_epi32(v2, v3));
  const __m256i s = _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
  return _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

// The f16 fields at p[0], p[1], ... (each `stride` bytes apart) as floats, lanes count.. zero.
template <int kCount>
__m128 gather_f16(const std::byte* p, size_t stride) {
  uint16_t h[4] = {0, 0, 0, 0};
  for (int k = 0; k < kCount; ++k) __builtin_memcpy(&h[k], p + k * stride, 2);
  int64_t packed;
  __builtin_memcpy(&packed, h, 8);
  return _mm_cvtph_ps(_mm_cvtsi64_si128(packed));
}

inline __m128 broadcast_f16(uint16_t h) { return _mm_set1_ps(_cvtsh_ss(h)); }

template <class Format, int R, int T>
void tile32(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
            float* y, int64_t y_stride, int64_t n) {
  using Block = typename Format::Block;
  const int64_t nb = n / kQK8_0;
  __m128 sum[R];  // lane t: the running sum of output (r, t)
  for (int r = 0; r < R; ++r) sum[r] = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    typename Format::Act act[T];
    __m128i asum = _mm_setzero_si128();  // lane t: sum of token t's quants (affine formats)
    {
      __m256i ones[T];
      for (int t = 0; t < T; ++t) {
        const BlockQ8_0& a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[i];
        act[t] = Format::act(a);
        if constexpr (Format::kAffine) ones[t] = Format::quant_sum(act[t]);
      }
      if constexpr (Format::kAffine) asum = reduce_tokens<T>(ones);
    }
    const __m128 dx = gather_f16<T>(
        reinterpret_cast<const std::byte*>(&reinterpret_cast<const BlockQ8_0*>(x)[i].d), x_row_bytes);
    for (int r = 0; r < R; ++r) {
      const Block& b = reinterpret_cast<const Block*>(w + r * w_row_bytes)[i];
      const typename Format::Weight wt = Format::weight(b);
      __m256i v[T];
      for (int t = 0; t < T; ++t) v[t] = Format::dot(wt, act[t]);
      const __m128 s = _mm_cvtepi32_ps(reduce_tokens<T>(v));
      __m128 block = _mm_mul_ps(_mm_mul_ps(broadcast_f16(b.d), dx), s);
      if constexpr (Format::kAffine) {
        block = _mm_add_ps(block, _mm_mul_ps(_mm_mul_ps(broadcast_f16(b.m), dx), _mm_cvtepi32_ps(asum)));
      }
      sum[r] = _mm_add_ps(sum[r], block);
    }
  }
  for (int r = 0; r < R; ++r) {
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, sum[r]);
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = lanes[t];
  }
}

// Kernel of dispatch_tile for a tile32 format.
template <class Format>
struct Tile32 {
  template <int R, int T>
  static void run(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                  float* y, int64_t y_stride, int64_t n) {
    tile32<Format, R, T>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n);
  }
};

}  // namespace
}  // namespace tessera::kernels
