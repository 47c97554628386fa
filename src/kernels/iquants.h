// The 4-bit non-linear formats IQ4_NL (32-value blocks, Q8_0 activations) and IQ4_XS (256-value
// super-blocks, Q8_K activations): scalar reference kernels, the AVX2 and AVX-512 vec_dot
// variants, and the hooks that install them in the kernel table. Block layouts and the level
// table are in iquant_blocks.h. Every `n` is a count of values and must be a multiple of the
// format's block (32 for IQ4_NL, 256 for IQ4_XS); pointers name whole blocks of the stated format.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/iquant_blocks.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {

// Index of the level in kIQ4Levels nearest to v (ties to either side); NaN maps to 0.
int iq4_nearest_level(float v);

namespace scalar {

// IQ4_NL quantizer, per 32-value block: a signed step s with x ~ s * level. 48 candidate grids
// are tried (the value of largest magnitude placed at 0.70 .. 1.16 times either end of the table,
// -127 or 113), each value assigned to its nearest level and s refit to those levels by least
// squares; the candidate with least squared error wins. s is then rounded to f16 and its two f16
// neighbours are tried too, each with levels re-chosen for the coded step, plus two refit rounds;
// the exactly decoded error decides. Steps are capped at the largest f16 (no Inf for |x| > 8e6).
// A NaN or infinite input makes its block (IQ4_XS: super-block) code as zeros.
// Measured (256k values, outside the repository against GGML's C quantizers run on the same data),
// RMS error / RMS of the data:
//   N(0,1):  ours 0.0732, GGML quantize_iq4_nl (no importance matrix) 0.0761,
//            GGML quantize_row_iq4_nl_ref 0.0787;
//   U(-1,1): ours 0.0616, GGML 0.0640 / 0.0675; normal with 1% 20x outliers: 0.117, GGML 0.120.
// Worst error per block over normal, uniform, Laplace and outlier-laden data at scales 1e-3..300:
// 0.134 of the block's largest |x| (iquant_test.cpp holds it under 0.16).
void iq4_nl_to_float(const void* src, float* dst, int64_t n);
void iq4_nl_from_float(const float* src, void* dst, int64_t n);
float iq4_nl_dot(const void* row, const float* x, int64_t n);  // x: f32

// IQ4_XS quantizer: each 32-value sub-block's best step s_j is found as for IQ4_NL (before f16
// rounding); the f16 super-block scale d then maps the step of largest magnitude to -32 or to
// +31 (both tried), each s_j is coded as the nearest multiple of d in -32..31 or one of its two
// neighbours, whichever gives the sub-block less error with levels re-chosen for it.
// Measured as above: N(0,1) ours 0.0738, GGML quantize_iq4_xs (no importance matrix) 0.0767;
// U(-1,1) 0.0622 vs 0.0646; outlier-laden 0.119 vs 0.122. Worst error per super-block, as above,
// 0.147 of its largest |x|. A sub-block far smaller than the super-block's largest loses resolution
// to the 6-bit scales (as in GGML). Data near 1e-3 puts d in f16's subnormal range, which costs
// a little (uniform: 0.0627 instead of 0.0622; worst block 0.147 instead of 0.137).
void iq4_xs_to_float(const void* src, float* dst, int64_t n);
void iq4_xs_from_float(const float* src, void* dst, int64_t n);
float iq4_xs_dot(const void* row, const float* x, int64_t n);  // x: f32

// Weight rows against activations in the vec_dot_type. Each block's sum of level * activation
// products is formed exactly in integers (for IQ4_XS weighted by each sub-block's step s - 32),
// then scaled in float: IQ4_NL adds (d_w * d_a) * isum per 32-value block, IQ4_XS adds
// (d_a * d_w) * isum per super-block, blocks in order.
// Precondition: activation quants in [-127, 127] (q8_0_from_float and q8_k_from_float give that).
float iq4_nl_q8_0_vec_dot(const void* row, const void* x, int64_t n);  // x: Q8_0
float iq4_xs_q8_k_vec_dot(const void* row, const void* x, int64_t n);  // x: Q8_K

// The two searches above minimizing the weighted squared error sum_i w[i] (x[i] - x^[i])^2,
// with n per-value weights w >= 0 (null: unweighted, exactly the plain from_float).
void iq4_nl_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);
void iq4_xs_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);

}  // namespace scalar

// AVX2 variants (avx2_iquants.cpp): the same integer block sums, and the same float operations in
// the same order, so results equal the scalar references bit for bit. Precondition: the CPU has
// the AVX2 set (cpu_features().has_avx2_set()).
namespace avx2 {
float iq4_nl_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float iq4_xs_q8_k_vec_dot(const void* row, const void* x, int64_t n);
// vec_dot_tile (kernel_table.h) of each: every output bit-identical to its vec_dot.
void iq4_nl_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                              size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                              int64_t n);
void iq4_xs_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                              size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                              int64_t n);
}  // namespace avx2

// AVX-512 (F, BW, VL, VNNI) variants (avx512_iquants.cpp), bit-identical likewise.
// Precondition: cpu_features().has_avx512_set().
namespace avx512 {
float iq4_nl_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float iq4_xs_q8_k_vec_dot(const void* row, const void* x, int64_t n);
void iq4_nl_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                              size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                              int64_t n);
void iq4_xs_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                              size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                              int64_t n);
}  // namespace avx512

// Fills the IQ4_NL and IQ4_XS rows of `t` with the scalar references.
void install_scalar_iquant_rows(KernelTable& t);
// Replace the vec_dot entries of those rows with the AVX2 / AVX-512 variants and set their
// vec_dot_tile (the scalar rows have none). Preconditions: the rows are filled and the CPU has
// the instruction set.
void install_avx2_iquant_rows(KernelTable& t);
void install_avx512_iquant_rows(KernelTable& t);

}  // namespace tessera::kernels
