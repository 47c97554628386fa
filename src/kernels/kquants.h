// The k-quant formats Q4_K, Q5_K, Q6_K (weights) and Q8_K (the activations their vec_dots take):
// scalar reference kernels, the AVX2 variants, and the hook that installs them in the kernel
// table. Block layouts are in kquant_blocks.h; quantizer methods and their measured errors are
// documented at each from_float below. Every `n` is a count of values and must be a multiple of
// kQK_K (256); pointers name whole blocks of the stated format.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/kquant_blocks.h"

namespace tessera::kernels {

// Reads sub-block j's (6-bit scale, 6-bit min) from the 12-byte packed field of Q4_K/Q5_K.
// Bytes 0-3 hold scales 0-3 in their low 6 bits, bytes 4-7 mins 0-3; for j >= 4 the low four bits
// sit in byte j+4 (scale low nibble, min high nibble) and the top two in bits 6-7 of bytes j-4
// (scale) and j (min). Precondition: 0 <= j < 8.
void unpack_scale_min(const uint8_t* packed, int j, uint8_t* scale, uint8_t* min);
// Inverse of unpack_scale_min for all eight pairs. Precondition: every value < 64.
void pack_scales_mins(const uint8_t scales[8], const uint8_t mins[8], uint8_t packed[12]);

namespace scalar {

// Q4_K / Q5_K quantizer, per 32-value sub-block: finds the (step s >= 0, offset o >= 0) of the
// grid x ~ s*q - o, q in 0..nmax (15 or 31), with least squared error, by trying 13 grid
// densities (nmax-1 .. nmax+1.4 steps across [min(x,0), max(x)], in 0.2 increments), fitting s and
// o to each candidate's levels by least squares, and polishing the best with up to two
// assign/refit rounds. The eight steps and offsets are then coded as 6-bit multiples of the f16
// super-block scales d = max s / 63 and dmin = max o / 63, trying both roundings of each and
// keeping the pair with less error; levels are finally re-chosen for the coded values.
// Measured (N(0,1), 64k values): RMS error / RMS of the data = 0.070 (Q4_K), 0.035 (Q5_K); worst
// error per super-block, over normal, uniform, Laplace, outlier-laden and one-signed data, 0.116
// (Q4_K) and 0.057 (Q5_K) of the block's largest |x|. (GGML's reference quantizers, measured
// side by side on the same data: RMS 0.071 and 0.036.) Values need |x| < ~2e6 (f16 d and dmin).
void q4_k_to_float(const void* src, float* dst, int64_t n);
void q4_k_from_float(const float* src, void* dst, int64_t n);
float q4_k_dot(const void* row, const float* x, int64_t n);  // x: f32
void q5_k_to_float(const void* src, float* dst, int64_t n);
void q5_k_from_float(const float* src, void* dst, int64_t n);
float q5_k_dot(const void* row, const float* x, int64_t n);  // x: f32

// Q6_K quantizer, per 16-value sub-block: a signed step s with x ~ s*q, q in -32..31, the value
// of largest magnitude mapped near -32; 11 grid densities (31 .. 33 levels to that value) are
// tried, each refit by least squares, the best polished as above. Steps are coded as int8
// multiples of the f16 super-block scale d = -(step of largest magnitude) / 128, both roundings
// tried. Measured as above: RMS ratio 0.017 (GGML's reference: 0.018); worst error 0.028 of the
// block's largest |x| (up to 0.06 for data near 1e-3, where d falls into f16's subnormal range).
void q6_k_to_float(const void* src, float* dst, int64_t n);
void q6_k_from_float(const float* src, void* dst, int64_t n);
float q6_k_dot(const void* row, const float* x, int64_t n);  // x: f32

// The three searches above minimizing the weighted squared error sum_i w[i] (x[i] - x^[i])^2,
// with n per-value weights w >= 0 (null: unweighted, exactly the plain from_float); see
// weighted_quantize.h for the weights an importance matrix gives.
void q4_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);
void q5_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);
void q6_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w);

// Q8_K: d = max|x| / 127 (an f32), q = round-half-even(x * (1/d)) in -127..127; bsums filled. A
// block with max|x| < 1e-30 codes as all zero (d = 0). Error per value <= d/2 (plus f32
// rounding). NaN inputs are ignored for d and code as -127.
void q8_k_to_float(const void* src, float* dst, int64_t n);
void q8_k_from_float(const float* src, void* dst, int64_t n);
float q8_k_dot(const void* row, const float* x, int64_t n);     // x: f32
float q8_k_vec_dot(const void* row, const void* x, int64_t n);  // x: f32 (Q8_K as a weight)

// Weight rows against Q8_K activations. Each block's sum is formed exactly in integers
// (scale-weighted quant products, with the Q4_K/Q5_K mins and the Q6_K offset of 32 folded in
// through bsums), then scaled once in float; blocks are summed in order.
float q4_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
float q5_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
float q6_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);

}  // namespace scalar

// AVX2 + FMA + F16C variants (avx2_kquants.cpp). Same integer sums and the same float steps as the
// scalar references, so results match them bit for bit. Precondition: the CPU has that set
// (cpu_features().has_avx2_set()); calling them elsewhere is an illegal instruction.
namespace avx2 {
float q4_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
float q5_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
float q6_k_q8_k_vec_dot(const void* row, const void* x, int64_t n);
void q8_k_from_float(const float* src, void* dst, int64_t n);
}  // namespace avx2

// Replaces the k-quant vec_dot entries and Q8_K's from_float in `t` with the AVX2 variants.
// Precondition: the rows are already filled (scalar) and the CPU has the AVX2 set.
void install_avx2_kquant_rows(KernelTable& t);

}  // namespace tessera::kernels
