// AVX-512 (F, BW, VL, VNNI) kernels: the dot products, where the wider registers and the VNNI
// integer dot (vpdpbusd) pay; conversions and the Q8_0 quantizer stay the AVX2 versions. Same
// signatures, contracts and numerics as avx2_kernels.h (the same precondition included: Q8_0
// activation quants in [-127, 127]). Compiled in its own translation unit with per-file flags;
// may only run after cpu_features().has_avx512_set() said yes.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {

// Replaces the dot/vec_dot entries of F32/F16/BF16/Q8_0/Q4_0 in `t` with AVX-512 versions; meant
// to run after install_avx2_rows. Precondition: cpu_features().has_avx512_set().
void install_avx512_rows(KernelTable& t);

namespace avx512 {

float f32_dot(const void* row, const float* x, int64_t n);
float f16_dot(const void* row, const float* x, int64_t n);
float bf16_dot(const void* row, const float* x, int64_t n);

float f32_vec_dot(const void* row, const void* x, int64_t n);        // x: f32
float f16_vec_dot(const void* row, const void* x, int64_t n);        // x: f32
float bf16_vec_dot(const void* row, const void* x, int64_t n);       // x: f32
float q8_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);  // x: Q8_0
float q4_0_q8_0_vec_dot(const void* row, const void* x, int64_t n);  // x: Q8_0
void q4_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
void q8_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n);
// Q4_0x16GemmFn's contract over Q8_0x16 groups (packed_q8_0.h), bit-identical to
// scalar::q8_0x16_q8_0_gemm.
void q8_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
// F16x16 groups (packed_f16.h) against f32 tokens, bit-identical to scalar::f16x16_f32_gemm.
void f16x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                     const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride, int64_t n);
// Q4_Kx16GemmFn (packed_q4_k.h), bit-identical to scalar::q4_kx16_q8_k_gemm.
void q4_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
// Q4_0x16GemmFn over IQ4_NLx16 / Q4_1x16 / Q5_0x16 / Q5_1x16 groups, bit-identical to the scalar
// references of the same names (packed_q4_0.h, packed_legacy.h).
void iq4_nlx16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                         const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                         int64_t n);
void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
// Q4_Kx16GemmFn over Q6_Kx16 groups (packed_q6_k.h), bit-identical to scalar::q6_kx16_q8_k_gemm.
void q6_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
// Q4_Kx16GemmFn over Q2_Kx16 groups (packed_q2_k.h), bit-identical to scalar::q2_kx16_q8_k_gemm.
void q2_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q5_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q5_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
// Q4_0x16GemmFn (packed_q4_0.h), bit-identical to scalar::q4_0x16_q8_0_gemm.
void q4_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);

}  // namespace avx512
}  // namespace tessera::kernels
