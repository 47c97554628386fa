// AVX2 + FMA + F16C kernels for the F16x16 (packed_f16.h) and F16_2of4x16 (packed_f16_2of4.h)
// layouts over f32 activations, compiled with -ffp-contract=off: bit for bit the scalar
// references (each output's accumulator chains take the same FMAs in the same order and are
// summed the same way; a chain saved to memory between column chunks and reloaded is exact).
//
// A 256-bit register holds 8 of a group's 16 rows ("a half"), so an output's accumulators of the
// references (two for F16 and for 2:4) take 4 registers for a whole group and one token, out of 16.
//
// F16x16, per group column: 32 bytes (16 rows), two vcvtph2ps (one per half) and, per token, one
// vbroadcastss and two FMAs (32 FLOPs).
// - Decode (1 token): 32 bytes for 32 FLOPs, memory-bound (one Zen 4 core streams ~1 column per
//   cycle from DRAM at best; the core does 2 FMAs and 1 to 2 conversions a cycle). Both halves in
//   one pass (4 accumulators: 4 independent FMA chains, each met every other column, cover the
//   FMA latency at 2 columns per 4 cycles), the weights read once. No software prefetch: one
//   contiguous stream per group, as the AVX-512 tile measured (avx512_kernels.cpp).
// - Prefill: tiles of 3 tokens over both halves (3 x 2 x 2 = 12 accumulators, 2 converted
//   columns, 1 broadcast: 15 registers). Per column 2 vcvtph2ps with their loads, 3 vbroadcastss
//   (loads only on Zen 3/4, no vector ALU) and 6 FMAs: 3 cycles on the two FMA pipes, 5 loads.
//   Tokens go in blocks of 24 so a block's activations stay in L2 while every group meets them.
//   With the earlier four-chain numerics a tile held 2 tokens over one half and spent a
//   vpermilps (on the FMA pipes' ports) per FMA: TinyLlama's FFN shape ran at 57-71 GFLOP/s on one
//   core (docs/PERFORMANCE.md has the figures since).
//
// F16_2of4x16, per block (32 columns, 16 rows, 576 bytes) and half: one load of the 8 rows'
// codes; per kept value k one vpsrld of the codes by 2k (vpermilps reads the low 2 bits of each
// index, so no mask) and one vcvtph2ps, shared by the tile's tokens; per token and group of four
// weights one vbroadcastf128 of the four activations into both 128-bit lanes, and per kept value
// one vpermilps (in-lane, cheaper than the cross-lane vpermps, and the index needs no 4 (g % 2)
// added) and one FMA.
// - Decode: 576 bytes for 16 x 32 = 512 FLOPs (against dense F16's 1,024 bytes), both halves in
//   one pass (4 accumulators).
// - Prefill: tiles of 4 tokens over one half (4 tokens x 2 accumulators = 8 registers); per kept
//   value and half 1 conversion, 1 shift, 4 vpermilps and 4 FMAs, so the shuffle and FMA ports
//   (FP1/FP2 and FP0/FP1 on Zen 3/4) bound it. Chunked over blocks like the dense tile.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/avx2_packed.h"
#include "tessera/kernels/packed_f16.h"
#include "tessera/kernels/packed_f16_2of4.h"
#include "tessera/kernels/x86_packed_groups.h"

namespace tessera::kernels {
namespace {

// This file is compiled with AVX2 flags: as in avx2_kernels.cpp, it instantiates no template or
// inline function shared with other translation units (std::min, std::vector), whose AVX2 copy the
// linker could keep for callers on CPUs without AVX2.
int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// 8 f16 at p (one half of a column or kept value) as 8 floats.
inline __m256 cvt8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// One F16x16 group against T <= 3 tokens (rows x_row_bytes apart): both halves at once, the
// reference's two chains per output (column k into chain k % 2), so 4 T accumulators: per
// column two conversions, and per token one broadcast (a load) and two FMAs.
template <int T>
struct F16x16Tile {
  static_assert(T >= 1 && T <= 3);
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t*,
                  float* y, int64_t ys) {
    const float* xt[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xt[t] = reinterpret_cast<const float*>(x + t * xrb);
    __m256 a[T][2][2];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 8
      for (int h = 0; h < 2; ++h) a[t][h][0] = a[t][h][1] = _mm256_setzero_ps();
    }
    int64_t k = 0;
    for (; k + 2 <= n; k += 2) {
#pragma GCC unroll 8
      for (int j = 0; j < 2; ++j) {
        const __m256 w0 = cvt8(q + (k + j) * 32);
        const __m256 w1 = cvt8(q + (k + j) * 32 + 16);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m256 xv = _mm256_broadcast_ss(xt[t] + k + j);
          a[t][0][j] = _mm256_fmadd_ps(w0, xv, a[t][0][j]);
          a[t][1][j] = _mm256_fmadd_ps(w1, xv, a[t][1][j]);
        }
      }
    }
    if (k < n) {  // n odd: the last column into chain 0
      const __m256 w0 = cvt8(q + k * 32);
      const __m256 w1 = cvt8(q + k * 32 + 16);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256 xv = _mm256_broadcast_ss(xt[t] + k);
        a[t][0][0] = _mm256_fmadd_ps(w0, xv, a[t][0][0]);
        a[t][1][0] = _mm256_fmadd_ps(w1, xv, a[t][1][0]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 8
      for (int h = 0; h < 2; ++h) _mm256_storeu_ps(y + t * ys + 8 * h, _mm256_add_ps(a[t][h][0], a[t][h][1]));
    }
  }
};

// One F16_2of4x16 group against one token (decode): both halves, even and odd accumulators.
void f16_2of4_row(const uint8_t* q, int64_t nb, const float* xt, float* y) {
  __m256 a[2][2];
  for (int h = 0; h < 2; ++h) a[h][0] = a[h][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* block = q + b * kF16_2of4x16BlockBytes;
    __m256i codes[2];
    for (int h = 0; h < 2; ++h) {
      codes[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 512 + 32 * h));
    }
    for (int g = 0; g < 8; ++g) {  // kept values 2g, 2g + 1 lie in weights 4g..4g + 3
      const __m256 xg = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(xt + b * 32 + 4 * g));
      for (int h = 0; h < 2; ++h) {
        const __m256i i0 = _mm256_srli_epi32(codes[h], 4 * g);
        const __m256i i1 = _mm256_srli_epi32(codes[h], 4 * g + 2);
        a[h][0] = _mm256_fmadd_ps(cvt8(block + 2 * g * 32 + 16 * h), _mm256_permutevar_ps(xg, i0), a[h][0]);
        a[h][1] = _mm256_fmadd_ps(cvt8(block + (2 * g + 1) * 32 + 16 * h), _mm256_permutevar_ps(xg, i1), a[h][1]);
      }
    }
  }
  for (int h = 0; h < 2; ++h) _mm256_storeu_ps(y + 8 * h, _mm256_add_ps(a[h][0], a[h][1]));
}

// Blocks per chunk of a 2:4 prefill tile: 9 KB of a group's weights.
constexpr int64_t kChunkBlocks = 16;

// One F16_2of4x16 group against T tokens (rows x_row_bytes apart), a half at a time.
template <int T>
struct F16_2of4x16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t*,
                  float* y, int64_t ys) {
    if constexpr (T == 1) {
      f16_2of4_row(q, n / 32, reinterpret_cast<const float*>(x), y);
    } else {
      const int64_t nb = n / 32;
      const float* xt[T];
      for (int t = 0; t < T; ++t) xt[t] = reinterpret_cast<const float*>(x + t * xrb);
      __m256 saved[2][T][2];
      for (int h = 0; h < 2; ++h) {
        for (int t = 0; t < T; ++t) saved[h][t][0] = saved[h][t][1] = _mm256_setzero_ps();
      }
      for (int64_t b0 = 0; b0 < nb; b0 += kChunkBlocks) {
        const int64_t b1 = min64(nb, b0 + kChunkBlocks);
        for (int h = 0; h < 2; ++h) {
          __m256 a[T][2];
          for (int t = 0; t < T; ++t) {
            a[t][0] = saved[h][t][0];
            a[t][1] = saved[h][t][1];
          }
          for (int64_t b = b0; b < b1; ++b) {
            const uint8_t* block = q + b * kF16_2of4x16BlockBytes;
            const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 512 + 32 * h));
            for (int g = 0; g < 8; ++g) {
              const __m256i i0 = _mm256_srli_epi32(codes, 4 * g);
              const __m256i i1 = _mm256_srli_epi32(codes, 4 * g + 2);
              const __m256 w0 = cvt8(block + 2 * g * 32 + 16 * h);
              const __m256 w1 = cvt8(block + (2 * g + 1) * 32 + 16 * h);
              for (int t = 0; t < T; ++t) {
                const __m256 xg = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(xt[t] + b * 32 + 4 * g));
                a[t][0] = _mm256_fmadd_ps(w0, _mm256_permutevar_ps(xg, i0), a[t][0]);
                a[t][1] = _mm256_fmadd_ps(w1, _mm256_permutevar_ps(xg, i1), a[t][1]);
              }
            }
          }
          for (int t = 0; t < T; ++t) {
            saved[h][t][0] = a[t][0];
            saved[h][t][1] = a[t][1];
          }
        }
      }
      for (int h = 0; h < 2; ++h) {
        for (int t = 0; t < T; ++t) {
          _mm256_storeu_ps(y + t * ys + 8 * h, _mm256_add_ps(saved[h][t][0], saved[h][t][1]));
        }
      }
    }
  }
};

}  // namespace

namespace avx2 {

void f16x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                     const int32_t* /*terms*/, int64_t n_tokens, float* y, int64_t y_stride,
                     int64_t n) {
  // Tokens in blocks of kBlock, so that while a group meets the block's tiles the block's
  // activations (24 x 22 KB for a 5632-wide FFN down projection) stay in L2.
  constexpr int64_t kBlock = 24;
  const auto* xb = static_cast<const std::byte*>(x);
  for (int64_t b0 = 0; b0 < n_tokens; b0 += kBlock) {
    run_groups<3, F16x16Tile>(groups, f16x16_group_bytes(n), n_groups, xb + b0 * x_row_bytes,
                              x_row_bytes, nullptr, 0, min64(kBlock, n_tokens - b0),
                              y + b0 * y_stride, y_stride, n);
  }
}

void f16_2of4x16_f32_gemm(const void* groups, int64_t n_groups, const void* x,
                          size_t x_row_bytes, const int32_t* /*terms*/, int64_t n_tokens, float* y,
                          int64_t y_stride, int64_t n) {
  run_groups<4, F16_2of4x16Tile>(groups, f16_2of4x16_group_bytes(n), n_groups, x, x_row_bytes,
                                 nullptr, 0, n_tokens, y, y_stride, n);
}

}  // namespace avx2
}  // namespace tessera::kernels
