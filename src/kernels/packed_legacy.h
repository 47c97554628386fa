// Q4_1, Q5_0 and Q5_1 weights repacked at load into groups of 16 interleaved rows ("Q4_1x16",
// "Q5_0x16", "Q5_1x16"), as Q4_0x16 (packed_q4_0.h): one vpdpbusd against 4 broadcast
// activation bytes advances 16 rows, and the 16 rows' steps (and minimums) convert in one
// instruction. Row by row (GGUF) each block costs a nibble shuffle, a fifth-bit expansion, one or
// two scalar f16 conversions and a horizontal sum per row instead.
//
// Layout of one group (16 rows, nb = n_cols / 32 blocks), records of two blocks (a last odd block
// takes a record of its own): [quants 2p][quants 2p + 1][bits 2p][bits 2p + 1][scales 2p]
// [scales 2p + 1], where
//   quants  256 bytes, Q4_0x16's: chunk c (< 4, 64 bytes) holds for each lane l bytes
//           qs[4c .. 4c + 3] of row l's block verbatim (low nibbles: elements 4c + j, high
//           nibbles: 16 + 4c + j);
//   bits    (Q5_0, Q5_1) 64 bytes, eight 64-bit masks: mask c (< 4) has bit 4l + j set where
//           element 4c + j of row l has its fifth bit, mask 4 + c the same for element
//           16 + 4c + j (so a masked byte add places them under the chunk's bytes);
//   scales  the 16 rows' f16 steps in lane order (32 bytes), then for Q4_1 and Q5_1 their 16
//           f16 minimums (32 bytes).
// The same bytes per row and block as GGUF (20, 22, 24); rows past the last whole group follow
// in the GGUF row layout.
//
// Numerics: per output one accumulator, blocks in order, with q the level (0..15 or 0..31) and
// s = sum_j q * a, t = sum_j a exact integers:
//   Q5_0:        acc = fma(d_w * d_x, float(s - 16 t), acc)      (terms: q8_0_block_terms_x16)
//   Q4_1, Q5_1:  acc = fma(d_w * d_x, float(s), acc); acc = fma(m_w * d_x, float(t), acc)
//                                                                 (terms: q8_0_block_terms_sum)
// Scalar reference and SIMD kernels agree bit for bit; against the rows' vec_dots
// (legacy_quants.h) outputs differ by float rounding only.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

// Which of the three formats a layout function describes.
struct LegacyX16 {
  bool five_bits;  // Q5_0, Q5_1: the bits masks
  bool has_min;    // Q4_1, Q5_1: the minimums
  constexpr size_t bits_bytes() const { return five_bits ? 64 : 0; }
  constexpr size_t scale_bytes() const { return has_min ? 64 : 32; }
  constexpr size_t block_bytes() const { return 256 + bits_bytes() + scale_bytes(); }  // 16 rows
};
inline constexpr LegacyX16 kQ4_1x16{false, true};
inline constexpr LegacyX16 kQ5_0x16{true, false};
inline constexpr LegacyX16 kQ5_1x16{true, true};

// Offsets of block b's parts within a group of nb blocks.
constexpr size_t legacy_x16_quants_at(LegacyX16 f, int64_t b) {
  return static_cast<size_t>(b / 2) * 2 * f.block_bytes() + static_cast<size_t>(b % 2) * 256;
}
constexpr size_t legacy_x16_bits_at(LegacyX16 f, int64_t b, int64_t nb) {
  return static_cast<size_t>(b / 2) * 2 * f.block_bytes() +
         ((b | 1) < nb ? 512 + static_cast<size_t>(b % 2) * f.bits_bytes() : 256);
}
constexpr size_t legacy_x16_scales_at(LegacyX16 f, int64_t b, int64_t nb) {
  return static_cast<size_t>(b / 2) * 2 * f.block_bytes() +
         ((b | 1) < nb ? 512 + 2 * f.bits_bytes() + static_cast<size_t>(b % 2) * f.scale_bytes()
                       : 256 + f.bits_bytes());
}
constexpr size_t legacy_x16_group_bytes(LegacyX16 f, int64_t n_cols) {
  return static_cast<size_t>(n_cols / 32) * f.block_bytes();
}

// Per format, the functions the layout tables take (signatures as in packed_q4_0.h).
size_t q4_1x16_group_bytes(int64_t n_cols);
size_t q5_0x16_group_bytes(int64_t n_cols);
size_t q5_1x16_group_bytes(int64_t n_cols);
void pack_q4_1x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
void pack_q5_0x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
void pack_q5_1x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
void q4_1x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);
void q5_0x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);
void q5_1x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

// terms[2 (t nb + b)] = sum_j a_t[b][j] (q8_0_block_terms_sum) or -16 * that
// (q8_0_block_terms_x16); terms[2 (t nb + b) + 1] = the bits of d_x[t][b] as an f32.
void q8_0_block_terms_sum(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                          int32_t* terms);
void q8_0_block_terms_x16(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                          int32_t* terms);

namespace scalar {
// Q4_0x16GemmFn's contract over each format's groups.
void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q5_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
void q5_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
