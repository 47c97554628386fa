// F16 weights repacked at load into groups of 16 interleaved rows ("F16x16"): column k of the
// group is 16 consecutive f16 values, one per row, so one conversion gives a 512-bit register of
// 16 rows' weights and one FMA against the token's broadcast x[k] advances 16 outputs. Several
// tokens share each converted register (prefill: T FMAs per load instead of the row-major dot's
// one FMA per two loads).
//
// Layout of one group: n_cols columns of 16 f16 (32 bytes, lane order), the same bytes as 16
// GGUF rows; rows past the last whole group follow in the row layout.
//
// Numerics: per output (row l, token t) two f32 accumulators, column k into accumulator k % 2
// with a fused multiply-add, summed as a0 + a1: the same arithmetic whatever the number of tokens
// (decode and prefill agree bit for bit), scalar reference and SIMD alike. Two, not four: an
// AVX2 prefill tile then holds 3 tokens x both 8-row halves x 2 chains in 12 of its 16 registers
// (with four, 2 tokens over one half, and a shuffle per FMA); two chains per 16 rows still cover
// the FMA latency in decode (avx2_packed_f16.cpp, avx512_packed.cpp).
// Against f16_vec_dot outputs differ by float rounding only.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

inline size_t f16x16_group_bytes(int64_t n_cols) { return static_cast<size_t>(n_cols) * 32; }

void pack_f16x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
void f16x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

namespace scalar {
// Q4_0x16GemmFn's contract over F16x16 groups with f32 tokens (x_row_bytes apart); `terms` is
// unused (may be null).
void f16x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                     const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                     int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
