// AVX2 + FMA + F16C kernels for the 16-row packed layouts (packed_q4_0.h, packed_q8_0.h,
// packed_legacy.h, packed_q4_k.h, packed_q2_k.h, packed_q6_k.h, packed_f16.h, packed_f16_2of4.h):
// the Q4_0x16GemmFn / Q4_Kx16GemmFn contracts of the scalar references, bit for bit, on the same
// bytes the AVX-512 kernels read (a model packed at load runs on either). A 256-bit register holds
// 8 of a group's 16 rows, so a tile keeps two halves; AVX2 has no vpdpbusd, so the integer dots
// are vpmaddubsw (unsigned x signed bytes to 16-bit pairs) and vpmaddwd against ones, with the
// signed Q8_0 weights fed through the sign trick (|w| against sign(a, w)); the integer dots stay
// exact and the float steps follow the references' order.
// Precondition of the Q8_0-activation kernels: activation quants lie in [-127, 127] (as
// q8_0_from_float produces). Compiled with per-file flags: call only after
// cpu_features().has_avx2_set() said yes (install_avx2_rows does).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels::avx2 {

// avx2_packed_legacy.cpp: the 32-element block formats over Q8_0 activations.
void q4_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void iq4_nlx16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                         const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                         int64_t n);
void q8_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q5_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q5_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);

// avx2_packed_q8_0_2of4.cpp: the 2:4 Q8_0 gather kernel (terms as q8_0_block_terms; only d_x
// read).
void q8_0_2of4x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x,
                            size_t x_row_bytes, const int32_t* terms, int64_t n_tokens, float* y,
                            int64_t y_stride, int64_t n);

// avx2_packed_kquants.cpp: the 256-element super-block formats over Q8_K activations (pairs as
// q8_k_min_pairs / q8_k_bsum_pairs make them).
void q4_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q2_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q6_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);

// avx2_packed_f16.cpp: F16 and 2:4 F16 over f32 activations (`terms` unused).
void f16x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                     const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                     int64_t n);
void f16_2of4x16_f32_gemm(const void* groups, int64_t n_groups, const void* x,
                          size_t x_row_bytes, const int32_t* terms, int64_t n_tokens, float* y,
                          int64_t y_stride, int64_t n);

}  // namespace tessera::kernels::avx2
