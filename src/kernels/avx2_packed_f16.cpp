// AVX2 + FMA + F16C kernels for the F16x16 (packed_f16.h) and F16_2of4x16 (packed_f16_2of4.h)
// layouts over f32 activations, compiled with -ffp-contract=off: bit for bit the scalar
// references (each output's accumulator chains take the same FMAs in the same order and are
// summed the same way; a chain saved to memory between column chunks and reloaded is exact).
//
// A 256-bit register holds 8 of a group's 16 rows ("a half"), so an output's accumulators of the
// references (four for F16, two for 2:4) take 8 (F16) or 4 (2:4) registers for a whole group and
// one token, out of 16.
//
// F16x16, per group column: 32 bytes (16 rows), two vcvtph2ps (one per half) and, per token, one
// vbroadcastss and two FMAs (32 FLOPs).
// - Decode (1 token): 32 bytes for 32 FLOPs, memory-bound (one Zen 4 core streams ~1 column per
//   cycle from DRAM at best; the core does 2 FMAs and 1 to 2 conversions a cycle). Both halves in
//   one pass (8 accumulators, 8 independent FMA chains cover the FMA latency), the activation
//   broadcast once per column, the weights read once. No software prefetch: one contiguous stream
//   per group, as the AVX-512 tile measured (avx512_kernels.cpp).
// - Prefill: tiles of 2 tokens over one half at a time (2 tokens x 4 accumulators = 8
//   registers). Per four columns and half: 4 vcvtph2ps feeding 8 FMAs, and per token one
//   vbroadcastf128 of its 4 activations (interleaved in four-column chunks as the AVX-512 kernel
//   does) spread by 4 vpermilps. A load per FMA (vbroadcastss) is what limits it otherwise: with
//   3 tokens x 4 accumulators and broadcasts from memory (16 loads per 12 FMAs; AVX-512 folds its
//   broadcasts into the FMAs) TinyLlama's FFN shape ran at 56-57 GFLOP/s against 57-71 here, and
//   3 tokens with shuffles spilled (45-49); 2 shuffled tokens and a third broadcast from memory
//   measured the same as this (63-71). Microbench matmul/f16/avx2/R2048xC5632/T64 on the 2-core
//   Zen 4 host under load 4, one core, two rounds each; the noise is ~15%. The two halves of a
//   tile walk the same weights and activations, so a tile goes through the columns in chunks of
//   kChunkCols, half 0 then half 1 over each chunk (its 8 KB of weights and 2 KB of activations
//   then come from L1 the second time), with the 16 accumulators parked on the stack between
//   chunks.
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

// A thread's buffer of interleaved activations (f16x16_f32_gemm), grown as needed.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { delete[] p_; }
  float* get(size_t n) {
    if (n > n_) {
      delete[] p_;
      p_ = new float[n];
      n_ = n;
    }
    return p_;
  }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

// 8 f16 at p (one half of a column or kept value) as 8 floats.
inline __m256 cvt8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Element j of each 128-bit lane of xq, in every element of that lane (vpermilps).
inline __m256 lane_bcast(__m256 xq, int j) {
  switch (j) {
    case 0: return _mm256_permute_ps(xq, 0x00);
    case 1: return _mm256_permute_ps(xq, 0x55);
    case 2: return _mm256_permute_ps(xq, 0xAA);
    default: return _mm256_permute_ps(xq, 0xFF);
  }
}

// Columns per chunk of a prefill tile: 8 KB of a group's weights.
constexpr int64_t kChunkCols = 256;

// One F16x16 group against one token (decode): both halves, 4 accumulators each.
template <int T>
struct F16x16RowTile {
  static_assert(T == 1);
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t, const int32_t*,
                  float* y, int64_t) {
    const auto* xt = reinterpret_cast<const float*>(x);
    __m256 a[2][4];
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 4; ++j) a[h][j] = _mm256_setzero_ps();
    }
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
      for (int j = 0; j < 4; ++j) {
        const __m256 xv = _mm256_broadcast_ss(xt + k + j);
        a[0][j] = _mm256_fmadd_ps(cvt8(q + (k + j) * 32), xv, a[0][j]);
        a[1][j] = _mm256_fmadd_ps(cvt8(q + (k + j) * 32 + 16), xv, a[1][j]);
      }
    }
    for (; k < n; ++k) {
      const __m256 xv = _mm256_broadcast_ss(xt + k);
      a[0][k % 4] = _mm256_fmadd_ps(cvt8(q + k * 32), xv, a[0][k % 4]);
      a[1][k % 4] = _mm256_fmadd_ps(cvt8(q + k * 32 + 16), xv, a[1][k % 4]);
    }
    for (int h = 0; h < 2; ++h) {
      _mm256_storeu_ps(y + 8 * h, _mm256_add_ps(_mm256_add_ps(a[h][0], a[h][1]),
                                                _mm256_add_ps(a[h][2], a[h][3])));
    }
  }
};

// One F16x16 group against T tokens whose activations are interleaved in four-column chunks
// (f16x16_f32_gemm): xi[k T + 4 t + j] = x_t[k + j] for whole chunks, then the n % 4 last
// columns with n % 4 per token.
template <int T>
struct F16x16InterleavedTile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t, const int32_t*,
                  float* y, int64_t ys) {
    const auto* xi = reinterpret_cast<const float*>(x);
    __m256 saved[2][T][4];  // a half's accumulators between chunks
    for (int h = 0; h < 2; ++h) {
      for (int t = 0; t < T; ++t) {
        for (int j = 0; j < 4; ++j) saved[h][t][j] = _mm256_setzero_ps();
      }
    }
    const int64_t n4 = n & ~int64_t{3};
    const int64_t tail = n - n4;
    for (int64_t c0 = 0; c0 < n4; c0 += kChunkCols) {
      const int64_t c1 = min64(n4, c0 + kChunkCols);
      for (int h = 0; h < 2; ++h) {
        __m256 a[T][4];
        for (int t = 0; t < T; ++t) {
          for (int j = 0; j < 4; ++j) a[t][j] = saved[h][t][j];
        }
        const uint8_t* qh = q + 16 * h;
        for (int64_t k = c0; k < c1; k += 4) {
          __m256 xq[T];
          for (int t = 0; t < T; ++t) xq[t] = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(xi + k * T + 4 * t));
          for (int j = 0; j < 4; ++j) {
            const __m256 w = cvt8(qh + (k + j) * 32);
            for (int t = 0; t < T; ++t) {
              a[t][j] = _mm256_fmadd_ps(w, lane_bcast(xq[t], j), a[t][j]);
            }
          }
        }
        for (int t = 0; t < T; ++t) {
          for (int j = 0; j < 4; ++j) saved[h][t][j] = a[t][j];
        }
      }
    }
    for (int h = 0; h < 2; ++h) {
      for (int64_t k = n4; k < n; ++k) {
        const __m256 w = cvt8(q + k * 32 + 16 * h);
        for (int t = 0; t < T; ++t) {
          const __m256 xv = _mm256_broadcast_ss(xi + n4 * T + tail * t + (k - n4));
          saved[h][t][k % 4] = _mm256_fmadd_ps(w, xv, saved[h][t][k % 4]);
        }
      }
      for (int t = 0; t < T; ++t) {
        const __m256* a = saved[h][t];
        _mm256_storeu_ps(y + t * ys + 8 * h, _mm256_add_ps(_mm256_add_ps(a[0], a[1]),
                                                          _mm256_add_ps(a[2], a[3])));
      }
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
  if (n_tokens < 2) {
    run_groups<1, F16x16RowTile>(groups, f16x16_group_bytes(n), n_groups, x, x_row_bytes,
                                 nullptr, 0, n_tokens, y, y_stride, n);
    return;
  }
  // Tokens in blocks of kBlock, each block's tiles interleaved once (as avx512::f16x16_f32_gemm,
  // whose comment gives the reasons); within a block each group meets every tile while it sits in
  // L2, and a block bounds the per-thread buffer (kBlock x n floats).
  constexpr int64_t kTile = 2, kBlock = 24 * kTile;
  thread_local Scratch scratch;
  float* const xi = scratch.get(static_cast<size_t>(min64(n_tokens, kBlock) * n));
  const auto* xb = static_cast<const std::byte*>(x);
  const size_t gb = f16x16_group_bytes(n);
  const int64_t n4 = n & ~int64_t{3};
  for (int64_t b0 = 0; b0 < n_tokens; b0 += kBlock) {
    const int64_t b1 = min64(n_tokens, b0 + kBlock);
    for (int64_t t0 = b0; t0 < b1; t0 += kTile) {
      const int64_t T = min64(kTile, b1 - t0);
      float* dst = xi + (t0 - b0) * n;
      for (int64_t t = 0; t < T; ++t) {
        const float* src = reinterpret_cast<const float*>(xb + (t0 + t) * x_row_bytes);
        for (int64_t k = 0; k < n4; k += 4) {
          _mm_storeu_ps(dst + k * T + t * 4, _mm_loadu_ps(src + k));
        }
        for (int64_t k = n4; k < n; ++k) dst[n4 * T + t * (n - n4) + (k - n4)] = src[k];
      }
    }
    for (int64_t g = 0; g < n_groups; ++g) {
      const auto* q = static_cast<const uint8_t*>(groups) + g * gb;
      for (int64_t t0 = b0; t0 < b1; t0 += kTile) {
        const auto* xt = reinterpret_cast<const std::byte*>(xi + (t0 - b0) * n);
        float* yt = y + g * 16 + t0 * y_stride;
        run_remainder<F16x16InterleavedTile, kTile>(min64(kTile, b1 - t0), q, n, xt, 0,
                                                     nullptr, yt, y_stride);
      }
    }
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
