// The loop nest shared by the training GEMMs (gemm_f32.cpp, gemm_bf16.cpp): the classic blocked
// GEMM over packed panels, edge tiles through a scratch tile, and C split over a thread pool by
// whole register tiles. The callers bring the packing and the micro-kernel; nothing here touches
// an element's arithmetic, so blocking, the split and buffer addresses change no result.
// Internal to the kernels layer (not a contract for other layers).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "tessera/base/check.h"
#include "tessera/base/thread_pool.h"

namespace tessera::kernels::gemm_detail {

// A growable buffer aligned to a cache line (for speed only: no result depends on where it sits).
template <typename T>
class AlignedScratch {
 public:
  T* get(size_t n) {
    if (storage_.size() < n + 16) storage_.resize(n + 16);
    const auto addr = reinterpret_cast<uintptr_t>(storage_.data());
    return storage_.data() + ((64 - addr % 64) % 64) / sizeof(T);
  }

 private:
  std::vector<T> storage_;
};

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols, T any 4-byte type
// (bits are moved, never computed on): the transposing copy that packing a row-major operand
// into column-major slivers is. 4 x 4 blocks through SSE registers (baseline x86-64), edges one
// by one.
template <typename T>
void transpose_copy(const T* src, int64_t src_stride, int64_t rows, int64_t cols, T* dst,
                    int64_t dst_stride) {
  static_assert(sizeof(T) == 4);
  int64_t r = 0;
#if defined(__SSE2__)
  for (; r + 4 <= rows; r += 4) {
    const T* s0 = src + r * src_stride;
    const T* s1 = s0 + src_stride;
    const T* s2 = s1 + src_stride;
    const T* s3 = s2 + src_stride;
    int64_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      __m128 a = _mm_loadu_ps(reinterpret_cast<const float*>(s0 + c));
      __m128 b = _mm_loadu_ps(reinterpret_cast<const float*>(s1 + c));
      __m128 e = _mm_loadu_ps(reinterpret_cast<const float*>(s2 + c));
      __m128 f = _mm_loadu_ps(reinterpret_cast<const float*>(s3 + c));
      _MM_TRANSPOSE4_PS(a, b, e, f);
      _mm_storeu_ps(reinterpret_cast<float*>(dst + c * dst_stride + r), a);
      _mm_storeu_ps(reinterpret_cast<float*>(dst + (c + 1) * dst_stride + r), b);
      _mm_storeu_ps(reinterpret_cast<float*>(dst + (c + 2) * dst_stride + r), e);
      _mm_storeu_ps(reinterpret_cast<float*>(dst + (c + 3) * dst_stride + r), f);
    }
    for (; c < cols; ++c) {
      dst[c * dst_stride + r] = s0[c];
      dst[c * dst_stride + r + 1] = s1[c];
      dst[c * dst_stride + r + 2] = s2[c];
      dst[c * dst_stride + r + 3] = s3[c];
    }
  }
#endif
  for (; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * dst_stride + r] = src[r * src_stride + c];
  }
}

// Zeroes lanes [used, width) of every one of `depth` packed steps of a sliver (the rows or
// columns past the operand's edge).
template <typename T>
void zero_sliver_tail(T* d, int64_t depth, int64_t width, int64_t used) {
  if (used >= width) return;
  for (int64_t p = 0; p < depth; ++p) {
    for (int64_t i = used; i < width; ++i) d[p * width + i] = T{};
  }
}

// The register tile and cache blocks of one micro-kernel. `unit` is how many values of k one
// packed word holds (1 for f32; 2 for bf16 pairs); kc is a multiple of it.
struct Blocking {
  int mr = 1, nr = 1;
  int64_t kc = 256;  // k values per depth block
  int64_t mc = 128;  // rows of a packed A block
  int64_t nc = 1024; // columns of a packed B panel
  int unit = 1;
};

// The whole product C[m, n] (+)= A B on the calling thread, over packed words of type T:
//   pack_a(i0, rows, p0, kc, dst): rows [i0, i0 + rows) x k [p0, p0 + kc) of A in mr-row slivers,
//     sliver s at dst + s * kd (kd = ceil(kc / unit) words deep), rows past the edge zero;
//   pack_b(j0, cols, p0, kc, dst): k [p0, p0 + kc) x columns [j0, j0 + cols) of B likewise in
//     nr-column slivers;
//   micro(kd, a_sliver, b_sliver, c_tile, ldc, load_c): one full mr x nr tile.
// A B panel (kc x nc) is packed once per depth block and met by every row block; each nr-wide
// sliver of it (in L1) meets every mr-row sliver of the packed A block (in L2).
template <typename T, typename PackA, typename PackB, typename Micro>
void blocked_gemm_serial(int64_t m, int64_t n, int64_t k, float* c, int64_t ldc, bool accumulate,
                         const Blocking& bl, PackA&& pack_a, PackB&& pack_b, Micro&& micro) {
  const int mr = bl.mr, nr = bl.nr, unit = bl.unit;
  TS_CHECK(mr * nr <= 16 * 64 && unit >= 1 && bl.kc % unit == 0);
  const int64_t kc_max = std::min<int64_t>(bl.kc, (k + unit - 1) / unit * unit);
  const int64_t kd_max = kc_max / unit;
  const int64_t mc_max = std::min<int64_t>(bl.mc, (m + mr - 1) / mr * mr);
  const int64_t nc_max = std::min<int64_t>(bl.nc, (n + nr - 1) / nr * nr);
  thread_local AlignedScratch<T> a_scratch, b_scratch;
  T* ap = a_scratch.get(static_cast<size_t>(mc_max * kd_max));
  T* bp = b_scratch.get(static_cast<size_t>(nc_max * kd_max));
  alignas(64) float tile[16 * 64];
  for (int64_t jc = 0; jc < n; jc += nc_max) {
    const int64_t nc = std::min(nc_max, n - jc);
    for (int64_t pc = 0; pc < k; pc += kc_max) {
      const int64_t kc = std::min(kc_max, k - pc);
      const int64_t kd = (kc + unit - 1) / unit;
      const bool load_c = accumulate || pc > 0;
      pack_b(jc, nc, pc, kc, bp);
      for (int64_t ic = 0; ic < m; ic += mc_max) {
        const int64_t mc = std::min(mc_max, m - ic);
        pack_a(ic, mc, pc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          const int64_t cols = std::min<int64_t>(nr, nc - jr);
          const T* bs = bp + jr * kd;
          for (int64_t ir = 0; ir < mc; ir += mr) {
            const int64_t rows = std::min<int64_t>(mr, mc - ir);
            float* ct = c + (ic + ir) * ldc + jc + jr;
            const T* as = ap + ir * kd;
            if (load_c && ir + mr < mc) {
              // The next tile's C lines, which the micro-kernel loads before its first product: on
              // accumulating products (dx, dW) they come from L3 or DRAM and stalled it.
              const float* next = ct + mr * ldc;
              for (int64_t i = 0; i < std::min<int64_t>(mr, mc - ir - mr); ++i) {
                for (int64_t j = 0; j < cols; j += 16) __builtin_prefetch(next + i * ldc + j, 1);
              }
            }
            if (rows == mr && cols == nr) {
              micro(kd, as, bs, ct, ldc, load_c);
              continue;
            }
            // An edge tile: through the scratch tile, whose extra lanes are thrown away.
            if (load_c) {
              for (int64_t i = 0; i < rows; ++i) {
                std::memcpy(tile + i * nr, ct + i * ldc, static_cast<size_t>(cols) * sizeof(float));
              }
            }
            micro(kd, as, bs, tile, int64_t{nr}, load_c);
            for (int64_t i = 0; i < rows; ++i) {
              std::memcpy(ct + i * ldc, tile + i * nr, static_cast<size_t>(cols) * sizeof(float));
            }
          }
        }
      }
    }
  }
}

// The products with nothing to multiply (m, n or k zero): handles them and returns true (k == 0
// zeroes C unless accumulating); false for everything else.
inline bool trivial_product(int64_t m, int64_t n, int64_t k, float* c, int64_t ldc,
                            bool accumulate) {
  if (m == 0 || n == 0) return true;
  if (k != 0) return false;
  if (!accumulate) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
  }
  return true;
}

// Below this many multiply-adds the pool's hand-off costs more than the second thread saves.
constexpr int64_t kParallelMinMacs = int64_t{1} << 18;

// Runs part(i0, i1, j0, j1) (C rows [i0, i1) x columns [j0, j1)) over the whole of C: on the
// calling thread when `pool` is null, single-threaded or the product small, else split along C's
// longer side by whole register tiles, one block per pool thread (each packs what it reads). No
// element's arithmetic depends on the split.
template <typename Part>
void split_over_pool(int64_t m, int64_t n, int64_t k, int mr, int nr, ThreadPool* pool,
                     Part&& part) {
  const int nt = pool == nullptr ? 1 : pool->size();
  if (nt <= 1 || m * n * k < kParallelMinMacs) {
    part(int64_t{0}, m, int64_t{0}, n);
    return;
  }
  const bool by_cols = n >= m;
  const int64_t unit = by_cols ? nr : mr;
  const int64_t units = ((by_cols ? n : m) + unit - 1) / unit;
  pool->run([&](int t, int n_threads) {
    const int64_t u0 = units * t / n_threads, u1 = units * (t + 1) / n_threads;
    if (u0 >= u1) return;
    if (by_cols) {
      part(int64_t{0}, m, u0 * unit, std::min(n, u1 * unit));
    } else {
      part(u0 * unit, std::min(m, u1 * unit), int64_t{0}, n);
    }
  });
}

}  // namespace tessera::kernels::gemm_detail
