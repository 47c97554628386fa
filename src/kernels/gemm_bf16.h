// A blocked, packed matrix product with bfloat16 inputs and f32 accumulation, for training's
// `--compute bf16`: C[m,n] (+)= A[m,k] B[k,n], A and B read through strides (the same three
// transposes as gemm_f32.h: x W^T, dy W, dy^T x), each operand either f32 (rounded to bf16 while
// it is packed) or already bf16 (a weight copy rounded once per optimizer step).
//
// The result, defined by the scalar reference (scalar::gemm_bf16_micro) and met bit for bit by the
// AVX-512 BF16 row (`vdpbf16ps`, whose documented arithmetic it is; checked on random data
// including subnormal accumulators, tests/kernels/gemm_bf16_test.cpp):
//   - every input x becomes b(x) = f32_to_bf16(x) (half.h: round to nearest even, NaN stays NaN);
//     a bf16 input is taken as is; a subnormal bf16 value then counts as a zero of its sign (DAZ);
//   - k is taken in pairs q = 0..ceil(k/2)-1 (an odd k's last pair is padded with zeros in A and
//     B); element c starts from C's value (accumulate; DAZ as well) or +0 and, for every pair in
//     order, c = ftz(fma(b(A(i,2q+1)), b(B(2q+1,j)), c)), then c = ftz(fma(b(A(i,2q)), b(B(2q,j)), c)),
//     where ftz flushes a subnormal result to a zero of its sign. Products of two bf16 values are
//     exact in f32, so each step is one f32 add of an exact product, rounded to nearest even.
// Blocking, packing, the thread split and buffer addresses change none of it (the depth blocks are
// even, so pairs never straddle them): bit-identical for any thread count and row.
// Rows: the scalar reference (any CPU, and TESSERA_FORCE_SCALAR), and AVX-512 BF16 where the
// kernel table chose avx512 and the CPU has avx512_bf16. Elsewhere the scalar row runs: slow, same
// bits (the trainer says so; f32 compute is the default).
// Thread-safety: as gemm_f32 (any thread; `pool` driven by one thread at a time, or null).
#pragma once

#include <cstdint>

#include "tessera/base/thread_pool.h"

namespace tessera::kernels {

// An operand read through strides: element (r, c) is at [r * row_stride + c * col_stride] of
// `f32` or of `bf16` (raw bfloat16 bits), whichever is non-null (exactly one).
struct Bf16Operand {
  const float* f32 = nullptr;
  const uint16_t* bf16 = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
};

// The micro-kernel's contract: C[mr, nr] (row stride ldc) gets, element by element, the pair
// steps above for q = 0..kp-1, starting from C's value when `load_c`, else +0. `a` is an mr-row
// sliver packed pair by pair (kp * mr words, word [q*mr + i] = b(A(i,2q)) | b(A(i,2q+1)) << 16),
// `b` an nr-column sliver likewise (word [q*nr + j] = b(B(2q,j)) | b(B(2q+1,j)) << 16); kp >= 1.
using GemmBf16MicroKernelFn = void (*)(int64_t kp, const uint32_t* a, const uint32_t* b, float* c,
                                       int64_t ldc, bool load_c);

struct GemmBf16Kernel {
  GemmBf16MicroKernelFn fn = nullptr;
  const char* name = "";
  int mr = 1, nr = 1;
  int kp = 256;             // pairs in one packed depth block (kc = 2 kp values of k)
  int mc = 144, nc = 1024;  // rows of the packed A block, columns of the B panel
};

// C[i, j] (row stride ldc) = (accumulate ? C[i, j] : 0) + the pairwise bf16 sum above, for i < m,
// j < n; with active_gemm_bf16_kernel() unless `kernel` is given. m, n, k >= 0 (k == 0 leaves C,
// or zeroes it when !accumulate); C must not overlap A or B. Splits over `pool` when big enough.
void gemm_bf16(int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b, float* c,
               int64_t ldc, bool accumulate, ThreadPool* pool,
               const GemmBf16Kernel* kernel = nullptr);

// dst[i] = f32_to_bf16(src[i]) (round to nearest even), i < n: the once-per-step weight copy.
void round_to_bf16(const float* src, int64_t n, uint16_t* dst);

namespace scalar {
// The reference micro-kernel (4 x 8): the definition above, written plainly.
void gemm_bf16_micro(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc,
                     bool load_c);
}  // namespace scalar

namespace avx512bf16 {
// 12 x 32 with vdpbf16ps. Precondition: cpu_features().has_avx512_set() && avx512_bf16.
void gemm_bf16_micro(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc,
                     bool load_c);
}  // namespace avx512bf16

// The row the kernel table's ISA level allows (avx512 with avx512_bf16: the vdpbf16ps row;
// anything else: scalar), picked once; and the rows themselves.
const GemmBf16Kernel& active_gemm_bf16_kernel();
// True when active_gemm_bf16_kernel() is a SIMD row (so bf16 compute can pay).
bool gemm_bf16_is_accelerated();
GemmBf16Kernel scalar_gemm_bf16_kernel();
GemmBf16Kernel avx512bf16_gemm_bf16_kernel();

}  // namespace tessera::kernels
