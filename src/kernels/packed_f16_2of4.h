// F16_2of4 weights (sparse_blocks.h) repacked at load into groups of 16 interleaved rows
// ("F16_2of4x16"). As Q8_0_2of4x16 (packed_q8_0_2of4.h) the kernel gathers the activations
// instead of expanding the weights: kept value k of a block (position order) lies in group
// g = k / 2 of four weights, at weight 4g + code of the block, and one vpermps per 16 kept values
// (one per row of the group) fetches the f32 activation each meets from the block's 32 (two
// registers: groups 0..3, then 4..7). Per 32 weights of a row: 16 f16 values and 16 2-bit codes,
// 36 bytes as in the file (64 dense), and 16 multiply-adds.
//
// Layout of one group (16 rows r = 16g + l; nb = n_cols / 32 blocks), 576 bytes per block:
//   values  512 bytes: for kept value k < 16, 32 bytes holding the 16 rows' f16 values, lane
//           order (one vcvtph2ps), at k * 32;
//   codes   64 bytes at 512: dword l = row l; bits 2k, 2k + 1 hold the position (0..3) of its
//           kept value k within group k / 2.
// Rows past the last whole group follow in the GGUF row layout, row_bytes apart.
//
// Numerics: per output (row l, token t) two f32 accumulators, the even kept values' products
// into a0 and the odd ones' into a1 (two FMA chains: one alone was latency-bound in decode),
// blocks in order and kept values in order: a_(k % 2) = fma(float(v[l][k]),
// x_t[32 b + 4 (k / 2) + code[l][k]], a_(k % 2)); the output is a0 + a1. The scalar reference and
// the SIMD kernel agree bit for bit; against f16_2of4_vec_dot outputs differ by f32 summation
// order only.
// Precondition: valid 2:4 masks (checked when a file is opened, sparse_quants.h);
// pack_f16_2of4x16 aborts on an invalid one (a caller's bug).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

constexpr size_t kF16_2of4x16BlockBytes = 512 + 64;

inline size_t f16_2of4x16_group_bytes(int64_t n_cols) {
  return static_cast<size_t>(n_cols / 32) * kF16_2of4x16BlockBytes;
}

void pack_f16_2of4x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
// Row l (< 16) of a packed group: f16_2of4_to_float's values.
void f16_2of4x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

namespace scalar {
// Q4_0x16GemmFn's contract over F16_2of4x16 groups with f32 tokens (no terms).
void f16_2of4x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                          const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                          int64_t n);
}  // namespace scalar

// AVX-512F kernel (avx512_sparse_packed.cpp), bit for bit the scalar reference.
namespace avx512 {
void f16_2of4x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                          const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                          int64_t n);
}  // namespace avx512

}  // namespace tessera::kernels
