// AVX2 + FMA + F16C kernels for F32, F16, BF16, Q8_0 and Q4_0: same signatures and contracts as
// the scalar references in scalar_kernels.h, compiled in their own translation unit with per-file
// flags, so they may only run after cpu_features().has_avx2_set() said yes.
//
// Numerics against the references (the tests in tests/kernels/simd_test.cpp hold them to this):
//   - to_float and from_float are bit-exact (NaN payloads aside: F16C quiets signalling NaNs).
//   - Q8_0 from_float (activation quantization) is bit-exact, rounding ties away from zero.
//   - dot/vec_dot sum in a different order (8 lanes, several accumulators): equal up to float
//     rounding; the integer part of Q8_0/Q4_0 x Q8_0 products is exact.
// Precondition of the Q8_0-activation vec_dots: activation quants lie in [-127, 127], as
// q8_0_from_float produces (the sign trick that feeds _mm256_maddubs_epi16 cannot negate -128).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {

// Replaces the F32/F16/BF16/Q8_0/Q4_0 entries of `t` that have AVX2 versions (f32 conversions
// stay the scalar memcpy) and the attention kernel. Precondition: cpu_features().has_avx2_set().
void install_avx2_rows(KernelTable& t);

namespace avx2 {

float f32_dot(const void* row, const float* x, int64_t n);

void f16_to_float(const void* src, float* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
float f16_dot(const void* row, const float* x, int64_t n);

void bf16_to_float(const void* src, float* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);
float bf16_dot(const void* row, const float* x, int64_t n);

void q8_0_to_float(const void* src, float* dst, int64_t n);
void q8_0_from_float(const float* src, void* dst, int64_t n);
float q8_0_dot(const void* row, const float* x, int64_t n);

void q4_0_to_float(const void* src, float* dst, int64_t n);
float q4_0_dot(const void* row, const float* x, int64_t n);

float f32_vec_dot(const void* row, const void* x, int64_t n);   // x: f32
float f16_vec_dot(const void* row, const void* x, int64_t n);   // x: f32
float bf16_vec_dot(const void* row, const void* x, int64_t n);  // x: f32
float q8_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);  // x: Q8_0
float q4_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);  // x: Q8_0

// silu_mul with e^-g by a degree-6 polynomial after range reduction; within 2e-6 relative of the
// scalar (std::exp) reference over [-20, 20] and the range ends (elementwise_test.cpp).
void silu_mul(float* gate, const float* up, int64_t n);
// y += a * x, 8 lanes (multiply, then add: the scalar row's bits).
void axpy(float a, const float* x, float* y, int64_t n);

}  // namespace avx2
}  // namespace tessera::kernels
