// Q8_0 weights repacked at load into groups of 16 interleaved rows ("Q8_0x16"), as Q4_0x16
// (packed_q4_0.h) without the nibbles: one vpdpbusd against 4 broadcast activation bytes
// advances 16 rows, and the 16 rows' scales convert in one instruction. vpdpbusd multiplies
// unsigned by signed bytes, so the weights are stored offset to w + 128 (the sign bit flipped)
// and each token's -128 * sum(a) per block comes precomputed.
//
// Layout of one group (16 rows, nb = n_cols / 32 blocks), 1088-byte records of two blocks (a
// last odd block takes a 544-byte record): [quants 2p][quants 2p + 1][scales 2p][scales 2p + 1]
// where a block's quants are eight 64-byte chunks, chunk c holding for each lane l bytes
// qs[4c .. 4c + 3] of row l's block, each XOR 0x80, and its scales the 16 f16 scales in lane
// order. 17 bytes per row and block as in GGUF; rows past the last whole group follow in the GGUF
// row layout.
//
// Numerics: per output one accumulator, blocks in order:
//   acc = fma(d_w * d_x, float(sum_j (q + 128) * a - 128 * sum_j a), acc)   (the int dot exact)
// Scalar reference and SIMD kernels agree bit for bit.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

inline size_t q8_0x16_quants_at(int64_t b) {
  return static_cast<size_t>(b / 2) * 1088 + static_cast<size_t>(b % 2) * 512;
}
inline size_t q8_0x16_scales_at(int64_t b, int64_t nb) {
  return static_cast<size_t>(b / 2) * 1088 + ((b | 1) < nb ? 1024 + static_cast<size_t>(b % 2) * 32 : 512);
}
inline size_t q8_0x16_group_bytes(int64_t n_cols) { return static_cast<size_t>(n_cols / 32) * 544; }

void pack_q8_0x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
void q8_0x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

// As q8_0_block_terms (packed_q4_0.h) with the Q8_0x16 offset: terms[2 (t nb + b)] =
// -128 * sum_j a_t[b][j], terms[2 (t nb + b) + 1] = the bits of d_x[t][b] as an f32.
void q8_0_block_terms_x128(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                           int32_t* terms);

namespace scalar {
// Q4_0x16GemmFn's contract over Q8_0x16 groups (terms from q8_0_block_terms_x128).
void q8_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
