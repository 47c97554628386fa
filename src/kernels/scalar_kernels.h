// Scalar reference kernels: the oracle for every SIMD kernel and the fallback on any CPU.
// Written for clarity; numerics are documented per format in docs/KERNELS.md.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels::scalar {

void f32_to_float(const void* src, float* dst, int64_t n);
void f32_from_float(const float* src, void* dst, int64_t n);
float f32_dot(const void* row, const float* x, int64_t n);

void f16_to_float(const void* src, float* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
float f16_dot(const void* row, const float* x, int64_t n);

void bf16_to_float(const void* src, float* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);
float bf16_dot(const void* row, const float* x, int64_t n);

// Q8_0: d = max|x| / 127, q = round(x / d).
void q8_0_to_float(const void* src, float* dst, int64_t n);
void q8_0_from_float(const float* src, void* dst, int64_t n);
float q8_0_dot(const void* row, const float* x, int64_t n);

// Q4_0: d = m / -8 where m is the value of largest magnitude (sign kept),
// q = min(15, floor(x / d + 8.5)); as GGML's reference quantizer.
void q4_0_to_float(const void* src, float* dst, int64_t n);
void q4_0_from_float(const float* src, void* dst, int64_t n);
float q4_0_dot(const void* row, const float* x, int64_t n);

// Products against activations already in the weights' vec_dot_type (see kernel_table.h).
float f32_vec_dot(const void* row, const void* x, int64_t n);   // x: f32
float f16_vec_dot(const void* row, const void* x, int64_t n);   // x: f32
float bf16_vec_dot(const void* row, const void* x, int64_t n);  // x: f32
// Integer dot per block, scaled by both blocks' scales: sum_b d_w * d_x * sum_j q_w * q_x.
float q8_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);  // x: Q8_0
float q4_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);  // x: Q8_0
// vec_dot_tile (kernel_table.h) as one q4_0_q8_0_vec_dot per output: the oracle for the SIMD tiles.
void q4_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);

// gate[i] = silu(gate[i]) * up[i], with std::exp.
void silu_mul(float* gate, const float* up, int64_t n);

// y[i] += a * x[i].
void axpy(float a, const float* x, float* y, int64_t n);

}  // namespace tessera::kernels::scalar
