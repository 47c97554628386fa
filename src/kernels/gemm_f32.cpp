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
#include "tessera/kernels/blocked_gemm.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

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
      gemm_detail::transpose_copy(a.data + (i0 + s) * a.row_stride + p0, a.row_stride, rows, kc, d, mr);
    } else {
      strided_copy(a, i0 + s, rows, p0, kc, d, mr);
    }
    gemm_detail::zero_sliver_tail(d, kc, mr, rows);
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
      gemm_detail::transpose_copy(b.data + (j0 + s) * b.col_stride + p0, b.col_stride, cols, kc, d, nr);
    } else {
      strided_copy(bt, j0 + s, cols, p0, kc, d, nr);
    }
    gemm_detail::zero_sliver_tail(d, kc, nr, cols);
  }
}

gemm_detail::Blocking blocking_of(const GemmF32Kernel& kr) {
  gemm_detail::Blocking bl;
  bl.mr = kr.mr;
  bl.nr = kr.nr;
  bl.kc = kr.kc;
  bl.mc = kr.mc;
  bl.nc = kr.nc;
  return bl;
}

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
  if (gemm_detail::trivial_product(m, n, k, c, ldc, accumulate)) return;
  const GemmF32Kernel& kr = kernel != nullptr ? *kernel : active_gemm_f32_kernel();
  TS_CHECK(kr.fn != nullptr && kr.mr >= 1 && kr.nr >= 1 && kr.mr * kr.nr <= 16 * 64 && kr.kc >= 1);
  const gemm_detail::Blocking bl = blocking_of(kr);
  gemm_detail::split_over_pool(m, n, k, kr.mr, kr.nr, pool,
                               [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const StridedMatrix as{a.data + i0 * a.row_stride, a.row_stride, a.col_stride};
    const StridedMatrix bs{b.data + j0 * b.col_stride, b.row_stride, b.col_stride};
    gemm_detail::blocked_gemm_serial<float>(
        i1 - i0, j1 - j0, k, c + i0 * ldc + j0, ldc, accumulate, bl,
        [&](int64_t r0, int64_t rows, int64_t p0, int64_t kc, float* dst) {
          pack_a(as, r0, rows, p0, kc, kr.mr, dst);
        },
        [&](int64_t c0, int64_t cols, int64_t p0, int64_t kc, float* dst) {
          pack_b(bs, p0, kc, c0, cols, kr.nr, dst);
        },
        kr.fn);
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
