// A blocked, packed f32 matrix product for training: C[m,n] (+)= A[m,k] B[k,n], with A and B
// read through strides, so every transpose the trainer needs (x W^T, dy W, dy^T x) is one call.
// The driver (gemm_f32.cpp) packs panels of A and B, blocks for the caches and splits C's rows or
// columns over a thread pool; a register-blocked micro-kernel (scalar, AVX2 or AVX-512, at the
// ISA level the kernel table picked from CPUID) does the arithmetic.
//
// Determinism: every element of C is one chain of fused multiply-adds over p = 0..k-1 in order,
// starting from C's old value (accumulate) or from zero: c = fma(A(i,p), B(p,j), c). Blocking,
// packing, the thread split, buffer addresses and the ISA change none of it, so the result is
// bit-identical for any thread count and any micro-kernel row (the scalar one uses std::fma).
// Thread-safety: gemm_f32 may be called from any thread; it runs on `pool` (which, as ever, one
// thread at a time may drive) or on the calling thread alone when `pool` is null.
#pragma once

#include <cstdint>

#include "tessera/base/thread_pool.h"

namespace tessera::kernels {

// A matrix read through strides: element (r, c) is data[r * row_stride + c * col_stride].
struct StridedMatrix {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
};

// The micro-kernel's contract: C[mr, nr] (row stride ldc) gets, element by element,
// c = fma(a[p*mr + i], b[p*nr + j], c) for p = 0..kc-1 in order, starting from C's value when
// `load_c` and from zero otherwise. `a` is an mr-row sliver packed column by column (kc * mr
// floats), `b` an nr-column sliver packed row by row (kc * nr floats); kc >= 1. Always a full
// tile: the driver handles edges through a scratch tile.
using GemmF32MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c,
                                      int64_t ldc, bool load_c);

// One ISA's micro-kernel with its tile and cache-block sizes (the blocking changes speed only).
struct GemmF32Kernel {
  GemmF32MicroKernelFn fn = nullptr;
  int mr = 1, nr = 1;         // register tile
  int kc = 256;               // depth of one packed panel (a B sliver kc * nr stays in L1)
  int mc = 128, nc = 1024;    // rows of the packed A block (L2), columns of the B panel
};

// C[i, j] (row stride ldc) = (accumulate ? C[i, j] : 0) + sum_p A(i, p) B(p, j) for i < m,
// j < n, p < k, with active_gemm_f32_kernel() unless `kernel` is given (tests pass each row).
// m, n, k >= 0 (k == 0 leaves C, or zeroes it when !accumulate); C must not overlap A or B. Splits over `pool` when the product is big enough to pay.
void gemm_f32(int64_t m, int64_t n, int64_t k, StridedMatrix a, StridedMatrix b, float* c,
              int64_t ldc, bool accumulate, ThreadPool* pool,
              const GemmF32Kernel* kernel = nullptr);

namespace scalar {
// The reference micro-kernel (4 x 8, std::fma): the oracle every SIMD row matches bit for bit.
void gemm_f32_micro(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                    bool load_c);
}  // namespace scalar

namespace avx2 {
// 6 x 16 (twelve ymm accumulators). Precondition: cpu_features().has_avx2_set().
void gemm_f32_micro(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                    bool load_c);
}  // namespace avx2

namespace avx512 {
// 12 x 32 (twenty-four zmm accumulators). Precondition: cpu_features().has_avx512_set().
void gemm_f32_micro(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                    bool load_c);
}  // namespace avx512

// The micro-kernel of the ISA level the kernel table chose (kernel_table().isa: CPUID, capped by
// TESSERA_ISA / TESSERA_FORCE_SCALAR), picked once. The rows themselves:
const GemmF32Kernel& active_gemm_f32_kernel();
GemmF32Kernel scalar_gemm_f32_kernel();
GemmF32Kernel avx2_gemm_f32_kernel();
GemmF32Kernel avx512_gemm_f32_kernel();

}  // namespace tessera::kernels
