// The two products of a LoRA update y += scale * B * (A * x) over the rows of one adapter
// segment (rows that share an adapter, gathered contiguously by the caller): shrink with A
// (rank x n_in) to rank values per row, expand with B, held transposed (Bt: rank x n_out), back to
// n_out and add. The shrink is the kernel table's f32 `dot` row (long dots: n_in each); the
// expand is its `axpy` row over slices of Bt (y_r += scale * t[r, k] * Bt[k, slice] for each k),
// because B's dots are only rank long. Both run through the table (scalar reference or SIMD by
// dispatch), and a segment reads A and Bt once for all of its rows: A's row k meets every row of
// the segment before row k + 1 is loaded, and a slice of Bt stays in L1 for all rows. Any rank
// (the adapter code caps it at 256). Small products run on the calling thread: a pool's fork and
// join costs more than a decode step's update.
// A and Bt may be held in f32, f16 or bf16 (`dtype`; half the bytes a step reads): the shrink
// uses that dtype's `dot` row, the expand widens each slice of Bt to f32 (exactly) before its
// axpys (so its bits are those of f32 buffers holding the same values; the shrink's are within
// the dtype's dot rounding).
// Thread-safety: pure functions of their arguments; `pool` (may be null) is used for the call.
#pragma once

#include <cstdint>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/dtype.h"

namespace tessera::kernels {

struct KernelTable;

// Multiply-adds below which a product runs on the calling thread (~30 us on one core): a decode
// step's update of a few rows is smaller than the pool's fork and join.
constexpr int64_t kLoraParallelWork = int64_t{1} << 19;

// t[r * rank + k] = sum_i a[k * n_in + i] * x[r * x_stride + i] for r < n_rows, k < rank.
void lora_shrink(const KernelTable& table, const float* a, int64_t rank, int64_t n_in,
                 const float* x, int64_t x_stride, int64_t n_rows, float* t, ThreadPool* pool);
// The same with A held in `dtype` (F32, F16 or BF16).
void lora_shrink(const KernelTable& table, const void* a, DType dtype, int64_t rank, int64_t n_in,
                 const float* x, int64_t x_stride, int64_t n_rows, float* t, ThreadPool* pool);

// y[r * y_stride + o] += scale * sum_k bt[k * n_out + o] * t[r * rank + k] for r < n_rows,
// o < n_out (summed in order of k, each term rounded before it is added).
void lora_expand(const KernelTable& table, const float* bt, int64_t rank, int64_t n_out,
                 const float* t, int64_t n_rows, float scale, float* y, int64_t y_stride,
                 ThreadPool* pool);
// The same with Bt held in `dtype` (F32, F16 or BF16).
void lora_expand(const KernelTable& table, const void* bt, DType dtype, int64_t rank, int64_t n_out,
                 const float* t, int64_t n_rows, float scale, float* y, int64_t y_stride,
                 ThreadPool* pool);

}  // namespace tessera::kernels
