// Importance-weighted quantizers: for each quantized dtype, a variant of the scalar reference
// quantizer whose scale/min search minimizes sum_i w[i] * (x[i] - x^[i])^2 instead of the plain
// squared error, for `tessera quantize --imatrix` (llama.cpp's importance matrix idea: columns
// whose inputs are large at inference matter more). The variants reuse each format's own search
// (legacy_quants, kquants, kquants_low, iquants, quant_search.h) with weights threaded through;
// with null weights they are the plain from_float, bit for bit.
// Offline only: scalar, no SIMD rows. Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "tessera/kernels/dtype.h"

namespace tessera::kernels {

// Quantizes n floats (n a multiple of the block size) into `dst`, minimizing the error weighted by
// the n per-value weights `w` (>= 0, finite; null: unweighted).
using WeightedFromFloatFn = void (*)(const float* src, void* dst, int64_t n, const float* w);

// The weighted quantizer of `t`: q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K,
// iq4_nl, iq4_xs; null for every other type (float types need none).
WeightedFromFloatFn weighted_from_float(DType t);

// The per-value weights of one row of n values from its columns' importance (the mean square of
// each column's input, as an importance matrix holds it):
//   w[i] = importance[i] * sqrt(sigma2 + x[i]^2),  sigma2 = sum_i x[i]^2 / n,
// so among columns of equal importance the larger weights still count more, as in llama.cpp's
// imatrix quantizers; importance is first divided by its row maximum (only ratios matter).
// Non-finite or negative importance counts as 0; x must be finite.
void importance_weights(const float* x, const float* importance, int64_t n, float* w);

}  // namespace tessera::kernels
