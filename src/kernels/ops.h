// Dense operators of the forward pass over f32 activations, built on the kernel table.
// Kernels know dtypes and shapes, never models. Shapes use: T = tokens, R = rows of a weight
// matrix (output features), C = columns (input features).
// Thread-safety: pure functions of their arguments; a ThreadPool argument is used for the call
// only and must be owned by the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/dtype.h"

namespace tessera::kernels {

struct KernelTable;

// How a matrix's bytes are laid out.
enum class MatrixLayout : uint8_t {
  kRows,     // row by row as GGUF stores them, rows `row_bytes` apart
  kQ4_0x16,  // Q4_0 in groups of 16 interleaved rows, then the n_rows % 16 last rows as kRows
             // (packed_q4_0.h); made by pack_matrix
  kQ4_Kx16,  // the same for Q4_K (packed_q4_k.h)
  kQ8_0x16,  // and Q8_0 (packed_q8_0.h)
  kF16x16,   // and F16 (packed_f16.h)
  kQ8_0_2of4x16,  // and Q8_0_2of4 (packed_q8_0_2of4.h)
  kIQ4_NLx16,     // and IQ4_NL (Q4_0x16's bytes: packed_q4_0.h)
  kQ4_1x16,       // and Q4_1, Q5_0, Q5_1 (packed_legacy.h)
  kQ5_0x16,
  kQ5_1x16,
  kQ2_Kx16,       // and Q2_K (packed_q2_k.h)
  kF16_2of4x16,   // and F16_2of4 (packed_f16_2of4.h)
  kQ6_Kx16,       // and Q6_K (packed_q6_k.h)
};

// A weight matrix [R, C] in `dtype`. row_bytes is the bytes of one row in the GGUF layout (also
// for packed layouts).
struct MatrixRef {
  DType dtype = DType::kF32;
  const void* data = nullptr;
  int64_t n_rows = 0;  // R
  int64_t n_cols = 0;  // C, a multiple of the dtype's block size
  size_t row_bytes = 0;
  MatrixLayout layout = MatrixLayout::kRows;
  size_t bytes() const;  // in its layout
};

// Bytes `w`'s matrix takes in `layout`: R * row_bytes, except 3% more for Q4_Kx16.
size_t matrix_bytes(const MatrixRef& w, MatrixLayout layout);

// The layout `table` runs `w` (a kRows matrix) fastest in: kQ4_0x16 / kQ4_Kx16 / kQ8_0x16 /
// kF16x16 / kQ8_0_2of4x16 / kIQ4_NLx16 / kQ4_1x16 / kQ5_0x16 / kQ5_1x16 / kQ2_Kx16 /
// kQ6_Kx16 / kF16_2of4x16 for Q4_0 / Q4_K / Q8_0 / F16 / Q8_0_2of4 / IQ4_NL / Q4_1 / Q5_0 /
// Q5_1 / Q2_K / Q6_K / F16_2of4 matrices of at least 16 rows
// where the table has the packed kernel, else kRows.
MatrixLayout preferred_layout(const KernelTable& table, const MatrixRef& w);
// Writes `w` (kRows) in `layout` to `dst` (matrix_bytes(w, layout), not overlapping w); returns the
// reference to the copy. kRows copies as is. With a pool, the row groups are split over its
// threads (the copy's bytes do not depend on it).
MatrixRef pack_matrix(const MatrixRef& w, MatrixLayout layout, std::byte* dst,
                      ThreadPool* pool = nullptr);

// y[T, R] = x[T, C] · w[R, C]^T. `pool` may be null (single-threaded). x and y must not alias.
// Numerics: x is first converted to the weights' vec_dot_type (f32 for float weights; Q8_0 for
// Q8_0 and Q4_0 weights, i.e. activations quantized per 32-block), then each row is a vec_dot.
void matmul(const MatrixRef& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool);
// The same with an explicit kernel table, e.g. scalar_kernel_table() for benchmarks and tests
// that compare implementations side by side.
void matmul(const KernelTable& table, const MatrixRef& w, const float* x, int64_t n_tokens,
            float* y, ThreadPool* pool);

// One matmul per matrix of `ws` (at most 8) on the same input x, outputs to ys[i]: bit for bit
// what separate matmul calls give. Where the matrices share dtype, packed layout and columns (Q,
// K and V; gate and up) x is converted once and the products run in one parallel region, one
// barrier instead of one per matrix; otherwise it calls matmul for each.
void matmul_shared_input(std::span<const MatrixRef> ws, const float* x, int64_t n_tokens,
                         std::span<float* const> ys, ThreadPool* pool);
void matmul_shared_input(const KernelTable& table, std::span<const MatrixRef> ws, const float* x,
                         int64_t n_tokens, std::span<float* const> ys, ThreadPool* pool);

// Copies row `row` of `w` (any layout) into `out` as f32 (n_cols values): embedding lookup.
void dequantize_row(const MatrixRef& w, int64_t row, float* out);

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]. out may equal x.
void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out);

// Numerically stable softmax in place (subtracts the max first).
void softmax(float* x, int64_t n);

// Rotates adjacent pairs (x[2i], x[2i+1]) of each of `n_heads` heads of `head_dim` values by
// angle pos * inv_freq[i] (GGML "normal" RoPE, as Llama checkpoints converted to GGUF and
// llama2.c use). inv_freq has head_dim / 2 entries.
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t pos, const float* inv_freq);
// rope() in two steps, so that a forward pass computes each position's angles once for all
// layers: rope_angles writes cs[2i] = cos(pos * inv_freq[i]), cs[2i + 1] = sin(...) for
// i < head_dim / 2; rope_rotate applies them. rope(x, ...) == rope_rotate(x, ..., cs) bitwise.
void rope_angles(int64_t pos, const float* inv_freq, int64_t head_dim, float* cs);
void rope_rotate(float* x, int64_t n_heads, int64_t head_dim, const float* cs);
// rope_rotate for GGML's "NeoX" RoPE (Qwen2/3, Gemma, Phi-3 GGUFs): the pair i of each head is
// (x[i], x[i + head_dim/2]) instead of adjacent values; the angles are the same.
void rope_rotate_neox(float* x, int64_t n_heads, int64_t head_dim, const float* cs);

// gate[i] = silu(gate[i]) * up[i].
void silu_mul(float* gate, const float* up, int64_t n);
// gate[i] = gelu(gate[i]) * up[i] with GELU's tanh approximation,
// gelu(g) = g / 2 * (1 + tanh(sqrt(2 / pi) * (g + 0.044715 g^3))) (Gemma's GeGLU FFN). Scalar
// only for now (no kernel-table entry): it costs F values per row against the F x D matmuls.
void gelu_tanh_mul(float* gate, const float* up, int64_t n);

// x[i] = cap * tanh(x[i] / cap): soft-capping of logits (Gemma 2's final logits). cap > 0.
void softcap(float* x, int64_t n, float cap);

}  // namespace tessera::kernels
