// The kernel table: one row of function pointers per supported dtype, filled once at start-up.
// Every entry has a plain scalar reference (kept forever as the oracle and fallback); SIMD
// variants with the same signatures replace entries when the CPU supports them.
// Set TESSERA_FORCE_SCALAR=1 in the environment (or call force_scalar_kernels) to use only the
// references. Thread-safety: the table is immutable after first use; the functions are pure.
#pragma once

#include <cstdint>

#include "tessera/kernels/attention.h"
#include "tessera/kernels/dtype.h"
#include "tessera/kernels/packed_f16.h"
#include "tessera/kernels/packed_f16_2of4.h"
#include "tessera/kernels/packed_q4_0.h"
#include "tessera/kernels/packed_legacy.h"
#include "tessera/kernels/packed_q2_k.h"
#include "tessera/kernels/packed_q4_k.h"
#include "tessera/kernels/packed_q6_k.h"
#include "tessera/kernels/packed_q8_0.h"
#include "tessera/kernels/packed_q8_0_2of4.h"

namespace tessera::kernels {

struct DTypeKernels {
  // Dequantizes n values (n a multiple of the block size) from `src` to floats.
  void (*to_float)(const void* src, float* dst, int64_t n) = nullptr;
  // Quantizes n floats (n a multiple of the block size) into `dst`.
  void (*from_float)(const float* src, void* dst, int64_t n) = nullptr;
  // Returns sum_i row[i] * x[i] over n elements, `row` in this dtype and `x` in f32. The
  // accurate path: used for small products and as the oracle for vec_dot.
  float (*dot)(const void* row, const float* x, int64_t n) = nullptr;
  // The format activations are converted to for vec_dot (GGML's design: quantized weights meet
  // activations quantized on the fly, e.g. Q4_0 x Q8_0 as integer dot products).
  DType vec_dot_type = DType::kF32;
  // Returns sum_i row[i] * x[i] with `x` already in vec_dot_type. The fast matmul path.
  float (*vec_dot)(const void* row, const void* x, int64_t n) = nullptr;
  // Optional (null: matmul calls vec_dot per output). A tile of vec_dots sharing loads:
  // y[t * y_stride + r] = vec_dot(w + r * w_row_bytes, x + t * x_row_bytes, n) for
  // r < n_rows, t < n_tokens, both in [1, kMaxTile]. Each weight block is unpacked once for
  // all the tile's tokens and each activation block loaded once for all its rows; every output
  // equals vec_dot's within the dtype's vec_dot tolerance.
  void (*vec_dot_tile)(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                       size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                       int64_t n) = nullptr;
};

// Largest n_rows and n_tokens of a vec_dot_tile call.
constexpr int kMaxTile = 4;

struct KernelTable {
  const char* isa = "scalar";  // which implementation set was chosen, for benchmark records
  DTypeKernels dtypes[kDTypeSlots];  // indexed by dtype_slot(DType); unsupported rows null
  AttentionRowFn attention_row = nullptr;  // attention over the KV cache (attention.h)
  AttentionRowsFn attention_rows = nullptr;  // the same for several rows of one sequence
  // gate[i] = silu(gate[i]) * up[i] = gate[i] / (1 + e^-gate[i]) * up[i] (the SwiGLU FFN).
  void (*silu_mul)(float* gate, const float* up, int64_t n) = nullptr;
  // y[i] += a * x[i] (a product rounded, then the sum: every row gives the same bits).
  void (*axpy)(float a, const float* x, float* y, int64_t n) = nullptr;
  // sum_i a[i] * b[i] over f32, summed in an order that depends on n alone (never on the
  // addresses, unlike the f32 row's `dot`, which aligns its loads): the same inputs give the same
  // bits in any buffers, which training's reproducibility needs. AVX2 where available (the AVX-512
  // table keeps it: the f32 dot is not where training's time goes yet).
  float (*fixed_dot)(const float* a, const float* b, int64_t n) = nullptr;
  // Matmul of Q4_0 weights repacked into groups of 16 rows (packed_q4_0.h). Null where the
  // packed layout is not faster than the GGUF one (no kernel for this ISA yet): models then keep
  // Q4_0 weights as the file has them.
  Q4_0x16GemmFn q4_0x16_gemm = nullptr;
  Q4_Kx16GemmFn q4_kx16_gemm = nullptr;  // the same for Q4_K (packed_q4_k.h)
  Q4_0x16GemmFn q8_0x16_gemm = nullptr;  // and Q8_0 (packed_q8_0.h)
  Q4_0x16GemmFn f16x16_gemm = nullptr;   // and F16 (packed_f16.h; f32 tokens)
  Q4_0x16GemmFn q8_0_2of4x16_gemm = nullptr;  // and Q8_0_2of4 (packed_q8_0_2of4.h; AVX-512 VBMI)
  Q4_0x16GemmFn iq4_nlx16_gemm = nullptr;  // and IQ4_NL (packed_q4_0.h)
  Q4_0x16GemmFn q4_1x16_gemm = nullptr;    // and Q4_1, Q5_0, Q5_1 (packed_legacy.h)
  Q4_0x16GemmFn q5_0x16_gemm = nullptr;
  Q4_0x16GemmFn q5_1x16_gemm = nullptr;
  Q4_Kx16GemmFn q2_kx16_gemm = nullptr;    // and Q2_K (packed_q2_k.h)
  Q4_Kx16GemmFn q6_kx16_gemm = nullptr;    // and Q6_K (packed_q6_k.h)
  Q4_0x16GemmFn f16_2of4x16_gemm = nullptr;  // and F16_2of4 (packed_f16_2of4.h; f32 tokens)
};

// The active table (SIMD where available unless forced scalar). Never null.
const KernelTable& kernel_table();
// The scalar reference table, always available; tests compare against it.
const KernelTable& scalar_kernel_table();
// Row for dtype `t` in `table`. Precondition: dtype_info(t).supported.
const DTypeKernels& kernels_for(const KernelTable& table, DType t);
inline const DTypeKernels& kernels_for(DType t) { return kernels_for(kernel_table(), t); }

}  // namespace tessera::kernels
