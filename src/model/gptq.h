// Error-feedback quantization of one weight matrix over its input's second moments (GPTQ,
// Frantar et al. 2022, with GGML's block scales): the columns are coded left to right; at the
// start of each type block a row's scales come from the type's importance-weighted search over
// its current values (kernels/weighted_quantize.h), then each column is rounded to its nearest
// level on those scales and the rounding error is carried into every column not yet coded, so
// that over the calibration inputs the outputs W x move as little as possible - not only each
// weight. Per-column importance (the diagonal, all a llama.cpp imatrix holds) cannot do that: it
// weighs each column's error alone, where correlated inputs let a later column cancel an earlier
// one's error.
//
// With H = sum x x^T (damped by `damp` x its mean diagonal) and U the upper Cholesky factor of
// H^-1 (H^-1 = U^T U), column c coded as q carries e = (w_c - q) / U_cc into the row:
// w_t -= e U_ct for t > c. The scale search weighs column j by 1 / U_jj^2 (its importance once
// the columns after it can compensate). A column with no input (H_jj = 0) gets H_jj = 1.
// Column-by-column rounding needs the type's affine level grid (value = a l + b): q4_0, q4_1,
// q5_0, q5_1, q8_0, q4_K, q5_K, q6_K. Other weighted types (q2_K, q3_K, iq4_nl, iq4_xs) are coded
// a whole block at a time and carry the block's error on: Err = (W_B - Q_B) U_BB^-1,
// W_rest -= Err U_B,rest (GPTQ's update for a block coded at once).
// Cost: O(cols^3) for the factorizations plus O(rows cols^2) for the updates, in double; offline
// (`tessera quantize --imatrix` with a file from `tessera eval imatrix --covariance`).
// Thread-safety: pure; `pool` parallelizes over rows (each row carries only its own errors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/kernels/dtype.h"

namespace tessera::model {

struct GptqOptions {
  double damp = 0.01;  // added to H's diagonal, times its mean diagonal
};

// Codes `w` (rows x cols, row-major, f32; used as scratch and left modified) into `out`
// (rows x dtype_row_bytes(type, cols) bytes) with second moments `h` (cols x cols, row-major,
// symmetric, positive semi-definite: sum of x x^T over the calibration tokens - any positive
// scale). Errors: kInvalidArgument for sizes that do not fit (cols not a multiple of the type's
// block, h not cols x cols, out too small) or a type without a weighted quantizer;
// kInvalidArgument naming the matrix-free cause when H is not positive definite after damping.
Status gptq_quantize(std::span<float> w, int64_t rows, int64_t cols, std::span<const double> h,
                     kernels::DType type, std::span<std::byte> out, ThreadPool& pool,
                     const GptqOptions& options = {});

// The upper Cholesky factor U of A^-1 (A^-1 = U^T U) for a symmetric positive definite n x n A
// (row-major), in double. Errors: kInvalidArgument when A is not positive definite.
Result<std::vector<double>> inverse_cholesky_upper(std::span<const double> a, int64_t n);

}  // namespace tessera::model
