// GGML's older 32-value formats Q4_1, Q5_0 and Q5_1 (layouts in legacy_quant_blocks.h): scalar
// reference kernels, the AVX2 and AVX-512 vec_dots, and the hooks that install them in the kernel
// table. Activations for vec_dot are Q8_0 (GGML pairs the *_1 formats with Q8_1, whose stored
// block sum Tessera does not need: the kernels form sum(q_x) from the Q8_0 quants themselves).
// Every `n` is a count of values and must be a multiple of kQKLegacy (32); pointers name whole
// blocks of the stated format. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/legacy_quant_blocks.h"

namespace tessera::kernels {

namespace scalar {

// Q5_0 quantizer, per block: x ~ d * l with l in -16..15. Tries 30 steps (the value of largest
// magnitude mapped to -13.5 .. -17 or +13.5 .. +17 levels in quarter-level increments, beyond the
// range clipping it), each both as is and refit by least squares to the levels it assigns, and
// keeps the step whose f16 coding gives the least squared error, every value re-rounded to its
// nearest level under that coded step; GGML's reference step (that value mapped to -16) is a
// candidate too, so no block codes worse than GGML's. Measured (65536 N(0,1) values): RMS error /
// RMS of the data = 0.0401; GGML's reference on the same data: 0.0430 (uniform data 0.0280 vs
// 0.0313). Worst error per block, over normal, uniform, outlier-laden and one-signed data: 0.066
// of the block's largest |x|. Values need |x| < ~8e5 (f16 d).
void q5_0_to_float(const void* src, float* dst, int64_t n);
void q5_0_from_float(const float* src, void* dst, int64_t n);
float q5_0_dot(const void* row, const float* x, int64_t n);  // x: f32

// Q4_1 / Q5_1 quantizer, per block: x ~ d * q + m, q in 0..nmax (15 or 31). Tries the min-max grid
// (GGML's reference) and 13 denser and sparser grids across [min x, max x] (nmax-1 .. nmax+1.4
// steps), each refit by least squares to its levels; each candidate's d and m are coded as f16 and
// scored with every value at its nearest level of the coded grid; the best is polished by up to
// two assign/refit rounds. Measured as above: RMS ratio 0.0699 (Q4_1) and 0.0336 (Q5_1); GGML's
// reference: 0.0785 and 0.0380. Worst error per block, as above: 0.067 (Q4_1) and 0.032 (Q5_1)
// of the block's range max x - min x. Values need |x| < ~6e4 (f16 m).
void q4_1_to_float(const void* src, float* dst, int64_t n);
void q4_1_from_float(const float* src, void* dst, int64_t n);
float q4_1_dot(const void* row, const float* x, int64_t n);  // x: f32
void q5_1_to_float(const void* src, float* dst, int64_t n);
void q5_1_from_float(const float* src, void* dst, int64_t n);
float q5_1_dot(const void* row, const float* x, int64_t n);  // x: f32

// The same searches minimizing the weighted squared error sum_i w[i] (x[i] - x^[i])^2, with n
// per-value weights w >= 0 (null: unweighted, which is exactly the plain from_float). The q4_0 and
// q8_0 ones use Q5_0's search on their level ranges (-8..7; -127..127), so unlike the plain
// Q4_0 / Q8_0 quantizers (GGML's rounding, kept bit for bit) they search their step.
// weighted_quantize.h turns an importance matrix row into these weights.
void q4_0_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);
void q8_0_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);
void q5_0_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);
void q4_1_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);
void q5_1_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);

// Weight rows against Q8_0 activations (a_x = the activation block's quants, d_x its scale). Per
// block, exactly in integers: s = sum q * a_x and t = sum a_x; then in float
//   Q5_0:       block = (d * d_x) * float(s - 16 t)
//   Q4_1, Q5_1: block = (d * d_x) * float(s) + (m * d_x) * float(t)
// and blocks are summed in order. The SIMD variants keep these steps, so they match bit for bit.
float q5_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float q4_1_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float q5_1_q8_0_vec_dot(const void* row, const void* x, int64_t n);

}  // namespace scalar

// Fills the Q4_1, Q5_0 and Q5_1 rows of `t` with the scalar references.
void install_scalar_legacy_quant_rows(KernelTable& t);

// AVX2 (+F16C) vec_dots (avx2_legacy_quants.cpp), bit-identical to the scalar ones. Precondition:
// the CPU has the AVX2 set (cpu_features().has_avx2_set()); elsewhere an illegal instruction.
namespace avx2 {
float q5_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float q4_1_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float q5_1_q8_0_vec_dot(const void* row, const void* x, int64_t n);
// vec_dot_tile (kernel_table.h) of each: every output bit-identical to the vec_dot above.
void q5_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
void q4_1_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
void q5_1_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
}  // namespace avx2

// AVX-512 VNNI vec_dots (avx512_legacy_quants.cpp), bit-identical to the scalar ones.
// Precondition: cpu_features().has_avx512_set().
namespace avx512 {
float q5_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float q4_1_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float q5_1_q8_0_vec_dot(const void* row, const void* x, int64_t n);
// vec_dot_tile (kernel_table.h) of each: every output bit-identical to the vec_dot above.
void q5_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
void q4_1_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
void q5_1_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
}  // namespace avx512

// Replace the three rows' vec_dot with the AVX2 / AVX-512 variants and set their vec_dot_tile
// (the scalar rows have none: matmul then runs vec_dot per output). Precondition: the rows are
// filled (install_scalar_legacy_quant_rows) and the CPU has the named set.
void install_avx2_legacy_quant_rows(KernelTable& t);
void install_avx512_legacy_quant_rows(KernelTable& t);

}  // namespace tessera::kernels
