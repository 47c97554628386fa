// The low-bit k-quant formats Q2_K and Q3_K (weights; their vec_dots take Q8_K activations):
// scalar reference kernels, the AVX2 and AVX-512 vec_dot variants, and the hooks that install
// them in the kernel table. Block layouts are in kquant_low_blocks.h. Every `n` is a count of
// values and must be a multiple of kQK_K (256); pointers name whole blocks of the stated format.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/kquant_low_blocks.h"

namespace tessera::kernels {

// The sixteen signed Q3_K sub-block scales s[j] - 32 (in -32..31) from the packed 12-byte field
// (layout in kquant_low_blocks.h).
void unpack_q3_k_scales(const uint8_t packed[kQ3KScaleBytes], int8_t scales[16]);
// Inverse of unpack_q3_k_scales. Precondition: every value in -32..31.
void pack_q3_k_scales(const int8_t scales[16], uint8_t packed[kQ3KScaleBytes]);

namespace scalar {

// Q3_K quantizer, per 16-value sub-block: a signed step s with x ~ s*q, q in -4..3. Candidate
// grids put the value of largest magnitude at -4 (2.5 .. 4.5 steps out) or at +3 (2 .. 3.5 steps
// out), each refit by least squares, the best polished by assign/refit rounds. Steps are coded as
// 6-bit signed multiples of the f16 super-block scale d = -(step of largest magnitude) / 32; each
// sub-block keeps the code near its step (floor/ceil and one beyond each) with the least error,
// and d is then refit by least squares over the super-block when that lowers the error.
// Measured (N(0,1), 64k values): RMS error / RMS of the data = 0.144 (GGML's reference
// quantizer, quantize_row_q3_K_ref, on the same data: 0.151; ours is lower on uniform, Laplace
// and one-signed data too, equal on outlier-laden data). Worst error per super-block over normal,
// uniform, Laplace, outlier-laden and one-signed data: 0.26 of the block's largest |x| (GGML's:
// 0.25; least-squares grids clip a block's extreme values a little more). Values need
// |x| < ~8e6 (f16 d); beyond that d saturates at 65504 and values clip.
void q3_k_to_float(const void* src, float* dst, int64_t n);
void q3_k_from_float(const float* src, void* dst, int64_t n);
float q3_k_dot(const void* row, const float* x, int64_t n);  // x: f32

// Q2_K quantizer, per 16-value sub-block: the (step >= 0, offset >= 0) of the grid
// x ~ step*q - offset, q in 0..3, found as for Q4_K (kquants.h): 25 grid densities across
// [min(x,0), max(x)] fit by least squares, then polished. Steps and offsets are coded as 4-bit
// multiples of the f16 d = max step / 15 and dmin = max offset / 15, each sub-block keeping the
// code pair near its (step, offset) with the least error; (d, dmin) are then refit jointly by
// least squares when that lowers the error.
// Measured as above: RMS ratio 0.263 (GGML's reference: 0.298; lower on every shape tried);
// worst error 0.50 of the block's largest |x| (GGML's: 0.41). Values need |x| < ~1e6 (f16 d and
// dmin saturate at 65504 beyond that).
void q2_k_to_float(const void* src, float* dst, int64_t n);
void q2_k_from_float(const float* src, void* dst, int64_t n);
float q2_k_dot(const void* row, const float* x, int64_t n);  // x: f32

// Weight rows against Q8_K activations. Each block's sum is formed exactly in integers
// (scale-weighted level products; Q2_K's mins folded in through the Q8_K bsums), then scaled once
// in float; blocks are summed in order.
float q2_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
float q3_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);

// The two searches above minimizing the weighted squared error sum_i w[i] (x[i] - x^[i])^2,
// with n per-value weights w >= 0 (null: unweighted, exactly the plain from_float).
void q3_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);
void q2_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);

}  // namespace scalar

// SIMD variants of the vec_dots (avx2_kquants_low.cpp, avx512_kquants_low.cpp): the same integer
// sums and the same float steps after them, so results equal the scalar references bit for bit.
// Preconditions: the CPU has the named set (cpu_features().has_avx2_set() / has_avx512_set());
// calling them elsewhere is an illegal instruction.
namespace avx2 {
float q2_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
float q3_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
// vec_dot_tile (kernel_table.h) of each: every output bit-identical to its vec_dot.
void q2_k_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
void q3_k_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
}  // namespace avx2
namespace avx512 {
float q2_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
float q3_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
void q2_k_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
void q3_k_q8_k_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
}  // namespace avx512

// Fills the Q2_K and Q3_K rows of `t` with the scalar references.
void install_scalar_kquant_low_rows(KernelTable& t);
// Replace the Q2_K/Q3_K vec_dot entries with the AVX2 / AVX-512 variants and set their
// vec_dot_tile (the scalar rows have none). Preconditions: the rows are filled
// (install_scalar_kquant_low_rows) and the CPU has the set.
void install_avx2_kquant_low_rows(KernelTable& t);
void install_avx512_kquant_low_rows(KernelTable& t);

}  // namespace tessera::kernels
