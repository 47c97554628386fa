#include "tessera/kernels/gemm_f32.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "tessera/base/check.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

// Per-thread packing buffers, kept between calls (pool threads live as long as the pool). Aligned
// to a cache line for speed only: no result depends on where they sit.
struct Scratch {
  std::vector<float> storage;
  float* get(size_t n) {
    if (storage.size() < n + 16) storage.resize(n + 16);
    const auto addr = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + ((64 - addr % 64) % 64) / sizeof(float);
  }
};

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols: the transposing copy
// that packing a row-major operand into column-major slivers is. 4 x 4 blocks through SSE
// registers (baseline x86-64), the edges one by one.
void transpose_copy(const float* src, int64_t src_stride, int64_t rows, int64_t cols, float* dst,
                    int64_t dst_stride) {
  int64_t r = 0;
#if defined(__SSE2__)
  for (; r + 4 <= rows; r += 4) {
    const float* s0 = src + r * src_stride;
    const float* s1 = s0 + src_stride;
    const float* s2 = s1 + src_stride;
    const float* s3 = s2 + src_stride;
    int64_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      __m128 a = _mm_loadu_ps(s0 + c), b = _mm_loadu_ps(s1 + c);
      __m128 e = _mm_loadu_ps(s2 + c), f = _mm_loadu_ps(s3 + c);
      _MM_TRANSPOSE4_PS(a, b, e, f);
      _mm_storeu_ps(dst + c * dst_stride + r, a);
      _mm_storeu_ps(dst + (c + 1) * dst_stride + r, b);
      _mm_storeu_ps(dst + (c + 2) * dst_stride + r, e);
      _mm_storeu_ps(dst + (c + 3) * dst_stride + r, f);
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

// dst[i] = src[i] for i < n, n a register tile's width (4 to 32): inline, where a memcpy call per
// 48 or 128 bytes costs more than the copy (perf had memmove at 5.8% of a training step's samples,
// these calls among them).
inline void short_copy(const float* src, int64_t n, float* dst) {
  int64_t i = 0;
#if defined(__SSE2__)
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(dst + i, _mm_loadu_ps(src + i));
#endif
  for (; i < n; ++i) dst[i] = src[i];
}

// The general strided case (neither rows nor columns contiguous): element by element.
void strided_copy(const StridedMatrix& m, int64_t r0, int64_t rows, int64_t c0, int64_t cols,
                  float* dst, int64_t dst_stride) {
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) {
      dst[c * dst_stride + r] = m.data[(r0 + r) * m.row_stride + (c0 + c) * m.col_stride];
    }
  }
}

// Packs rows [i0, i0 + mc) x columns [p0, p0 + kc) of A into slivers of mr rows: sliver s starts
// at dst + s * kc and holds element (i, p) at [p * mr + i]; rows past the block are zero.
void pack_a(const StridedMatrix& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, int mr,
            float* dst) {
  for (int64_t s = 0; s < mc; s += mr) {
    const int64_t rows = std::min<int64_t>(mr, mc - s);
    float* d = dst + s * kc;
    if (a.row_stride == 1) {  // a column of A is contiguous (dy^T): mr values per step
      for (int64_t p = 0; p < kc; ++p) {
        short_copy(a.data + (i0 + s) + (p0 + p) * a.col_stride, rows, d + p * mr);
      }
    } else if (a.col_stride == 1) {  // a row of A is contiguous (x, dy): transpose
      transpose_copy(a.data + (i0 + s) * a.row_stride + p0, a.row_stride, rows, kc, d, mr);
    } else {
      strided_copy(a, i0 + s, rows, p0, kc, d, mr);
    }
    if (rows < mr) {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t i = rows; i < mr; ++i) d[p * mr + i] = 0.0f;
      }
    }
  }
}

// Packs rows [p0, p0 + kc) x columns [j0, j0 + nc) of B into slivers of nr columns: sliver s
// starts at dst + s * kc and holds element (p, j) at [p * nr + j]; columns past the block are zero.
void pack_b(const StridedMatrix& b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, int nr,
            float* dst) {
  // B^T read as a matrix whose rows are B's columns: packing B by columns is packing B^T by rows.
  const StridedMatrix bt{b.data, b.col_stride, b.row_stride};
  for (int64_t s = 0; s < nc; s += nr) {
    const int64_t cols = std::min<int64_t>(nr, nc - s);
    float* d = dst + s * kc;
    if (b.col_stride == 1) {  // a row of B is contiguous (W, x): nr values per step
      for (int64_t p = 0; p < kc; ++p) {
        short_copy(b.data + (p0 + p) * b.row_stride + j0 + s, cols, d + p * nr);
      }
    } else if (b.row_stride == 1) {  // a column of B is contiguous (W^T, K^T): transpose
      transpose_copy(b.data + (j0 + s) * b.col_stride + p0, b.col_stride, cols, kc, d, nr);
    } else {
      strided_copy(bt, j0 + s, cols, p0, kc, d, nr);
    }
    if (cols < nr) {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t j = cols; j < nr; ++j) d[p * nr + j] = 0.0f;
      }
    }
  }
}

// The whole product on the calling thread: the loops of the classic blocked GEMM. A B panel
// (kc x nc) is packed once per depth block and met by every row block; each nr-wide sliver of it
// (in L1) meets every mr-row sliver of the packed A block (in L2).
void gemm_serial(int64_t m, int64_t n, int64_t k, const StridedMatrix& a, const StridedMatrix& b,
                 float* c, int64_t ldc, bool accumulate, const GemmF32Kernel& kr) {
  const int mr = kr.mr, nr = kr.nr;
  const int64_t kc_max = std::min<int64_t>(kr.kc, k);
  const int64_t mc_max = std::min<int64_t>(kr.mc, (m + mr - 1) / mr * mr);
  const int64_t nc_max = std::min<int64_t>(kr.nc, (n + nr - 1) / nr * nr);
  thread_local Scratch a_scratch, b_scratch;
  float* ap = a_scratch.get(static_cast<size_t>(mc_max * kc_max));
  float* bp = b_scratch.get(static_cast<size_t>(nc_max * kc_max));
  alignas(64) float tile[16 * 64];
  TS_CHECK(mr * nr <= 16 * 64);
  for (int64_t jc = 0; jc < n; jc += nc_max) {
    const int64_t nc = std::min(nc_max, n - jc);
    for (int64_t pc = 0; pc < k; pc += kc_max) {
      const int64_t kc = std::min(kc_max, k - pc);
      const bool load_c = accumulate || pc > 0;
      pack_b(b, pc, kc, jc, nc, nr, bp);
      for (int64_t ic = 0; ic < m; ic += mc_max) {
        const int64_t mc = std::min(mc_max, m - ic);
        pack_a(a, ic, mc, pc, kc, mr, ap);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          const int64_t cols = std::min<int64_t>(nr, nc - jr);
          const float* bs = bp + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += mr) {
            const int64_t rows = std::min<int64_t>(mr, mc - ir);
            float* ct = c + (ic + ir) * ldc + jc + jr;
            const float* as = ap + ir * kc;
            if (load_c && ir + mr < mc) {
              // The next tile's C lines, which the micro-kernel loads before its first FMA: on
              // accumulating products (dx, dW) they come from L3 or DRAM and stalled it.
              const float* next = ct + mr * ldc;
              for (int64_t i = 0; i < std::min<int64_t>(mr, mc - ir - mr); ++i) {
                for (int64_t j = 0; j < cols; j += 16) __builtin_prefetch(next + i * ldc + j, 1);
              }
            }
            if (rows == mr && cols == nr) {
              kr.fn(kc, as, bs, ct, ldc, load_c);
              continue;
            }
            // An edge tile: through the scratch tile, whose extra lanes are thrown away.
            if (load_c) {
              for (int64_t i = 0; i < rows; ++i) {
                std::memcpy(tile + i * nr, ct + i * ldc, static_cast<size_t>(cols) * sizeof(float));
              }
            }
            kr.fn(kc, as, bs, tile, nr, load_c);
            for (int64_t i = 0; i < rows; ++i) {
              std::memcpy(ct + i * ldc, tile + i * nr, static_cast<size_t>(cols) * sizeof(float));
            }
          }
        }
      }
    }
  }
}

// Below this many multiply-adds the pool's hand-off costs more than the second thread saves.
constexpr int64_t kParallelMinFmas = int64_t{1} << 18;

}  // namespace

const GemmF32Kernel& active_gemm_f32_kernel() {
  // The kernel table owns the ISA decision (CPUID, TESSERA_ISA, TESSERA_FORCE_SCALAR); the GEMM
  // follows the level it chose.
  static const GemmF32Kernel kernel = [] {
    const char* isa = kernel_table().isa;
    if (std::strcmp(isa, "avx512") == 0) return avx512_gemm_f32_kernel();
    if (std::strcmp(isa, "avx2") == 0) return avx2_gemm_f32_kernel();
    return scalar_gemm_f32_kernel();
  }();
  return kernel;
}

void gemm_f32(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c,
              int64_t ldc, bool accumulate, ThreadPool* pool, const GemmF32Kernel* kernel) {
  TS_CHECK(m >= 0 && n >= 0 && k >= 0 && ldc >= n);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    }
    return;
  }
  const GemmF32Kernel& kr = kernel != nullptr ? *kernel : active_gemm_f32_kernel();
  TS_CHECK(kr.fn != nullptr && kr.mr >= 1 && kr.nr >= 1 && kr.mr * kr.nr <= 16 * 64);
  const int nt = pool == nullptr ? 1 : pool->size();
  if (nt <= 1 || m * n * k < kParallelMinFmas) {
    gemm_serial(m, n, k, a, b, c, ldc, accumulate, kr);
    return;
  }
  // Split C by whole register tiles along its longer side: each thread owns a block of C and
  // packs what it reads. No element's arithmetic depends on the split.
  const bool by_cols = n >= m;
  const int64_t unit = by_cols ? kr.nr : kr.mr;
  const int64_t units = ((by_cols ? n : m) + unit - 1) / unit;
  pool->run([&](int t, int n_threads) {
    const int64_t u0 = units * t / n_threads, u1 = units * (t + 1) / n_threads;
    if (u0 >= u1) return;
    if (by_cols) {
      const int64_t j0 = u0 * unit, j1 = std::min(n, u1 * unit);
      StridedMatrix bt = b;
      bt.data += j0 * b.col_stride;
      gemm_serial(m, j1 - j0, k, a, bt, c + j0, ldc, accumulate, kr);
    } else {
      const int64_t i0 = u0 * unit, i1 = std::min(m, u1 * unit);
      StridedMatrix at = a;
      at.data += i0 * a.row_stride;
      gemm_serial(i1 - i0, n, k, at, b, c + i0 * ldc, ldc, accumulate, kr);
    }
  });
}

namespace scalar {

void gemm_f32_micro(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                    bool load_c) {
  constexpr int kMr = 4, kNr = 8;
  float acc[kMr][kNr];
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) acc[i][j] = load_c ? c[i * ldc + j] : 0.0f;
  }
  for (int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < kMr; ++i) {
      const float ai = a[p * kMr + i];
      for (int j = 0; j < kNr; ++j) acc[i][j] = std::fma(ai, b[p * kNr + j], acc[i][j]);
    }
  }
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) c[i * ldc + j] = acc[i][j];
  }
}

}  // namespace scalar

GemmF32Kernel scalar_gemm_f32_kernel() {
  GemmF32Kernel k;
  k.fn = scalar::gemm_f32_micro;
  k.mr = 4;
  k.nr = 8;
  k.kc = 256;
  k.mc = 128;
  k.nc = 1024;
  return k;
}

}  // namespace tessera::kernels
