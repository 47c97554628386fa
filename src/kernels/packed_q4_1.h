// Q4_1 weights repacked at load into groups of 16 interleaved rows ("Q4_1x16"), as Q4_0x16
// (packed_q4_0.h) with a second array of f16s per block, the rows' minimums: one vpdpbusd against
// 4 broadcast activation bytes advances 16 rows, and the 16 rows' steps and minimums convert in
// one instruction each. Row by row (GGUF) each 20-byte block costs a nibble shuffle, two scalar
// f16 conversions and a horizontal sum per row.
//
// Layout of one group (16 rows, nb = n_cols / 32 blocks), 640-byte records of two blocks (a last
// odd block takes a 320-byte record): [quants 2p][quants 2p + 1][d 2p][m 2p][d 2p + 1][m 2p + 1]
// where a block's quants are Q4_0x16's (four 64-byte chunks; chunk c holds, for each lane l,
// bytes qs[4c .. 4c + 3] of row l's block verbatim) and d / m are the 16 rows' f16 steps and
// minimums in lane order, 32 bytes each. 20 bytes per row and block, as in GGUF; rows past the
// last whole group follow in the GGUF row layout.
//
// Numerics: per output one accumulator, blocks in order, with s = sum_j q * a and t = sum_j a
// exact integers (t from q8_0_block_terms_sum):
//   acc = fma(d_w * d_x, float(s), acc);  acc = fma(m_w * d_x, float(t), acc)
// Scalar reference and SIMD kernels agree bit for bit; against q4_1_q8_0_vec_dot outputs differ
// by float rounding only.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

inline size_t q4_1x16_quants_at(int64_t b) {
  return static_cast<size_t>(b / 2) * 640 + static_cast<size_t>(b % 2) * 256;
}
// Block b's 16 steps; its 16 minimums follow them (+32).
inline size_t q4_1x16_scales_at(int64_t b, int64_t nb) {
  return static_cast<size_t>(b / 2) * 640 + ((b | 1) < nb ? 512 + static_cast<size_t>(b % 2) * 64 : 256);
}
inline size_t q4_1x16_group_bytes(int64_t n_cols) { return static_cast<size_t>(n_cols / 32) * 320; }

void pack_q4_1x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
void q4_1x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

// terms[2 (t nb + b)] = sum_j a_t[b][j], terms[2 (t nb + b) + 1] = the bits of d_x[t][b] as an
// f32 (q8_0_block_terms with offset -1).
void q8_0_block_terms_sum(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                          int32_t* terms);

namespace scalar {
// Q4_0x16GemmFn's contract over Q4_1x16 groups (terms from q8_0_block_terms_sum).
void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
