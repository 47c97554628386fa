// Q4_0 weights repacked at load into groups of 16 interleaved rows ("Q4_0x16"), the layout the
// VNNI matmul wants: one 512-bit register holds the same 4 bytes of 16 rows, so a single
// vpdpbusd against 4 broadcast activation bytes advances 16 outputs, and the 16 rows' block
// scales sit next to each other (one f16 -> f32 conversion for all 16). The GGUF layout, one
// row after another with an f16 scale per 18-byte block, costs a nibble shuffle, four scalar
// scale conversions and a horizontal sum per row instead (docs/PERFORMANCE.md).
//
// Layout of one group (16 rows r = 16g + l, l < 16; nb = n_cols / 32 blocks per row), one
// stream of 576-byte records of two blocks (a last odd block takes a 288-byte record):
//   quants  256 bytes per block at q4_0x16_quants_at(b): four 64-byte chunks; chunk c holds,
//           for each lane l, bytes qs[4c .. 4c + 3] of row l's block b verbatim (so the low
//           nibbles are elements 4c + j, the high nibbles elements 16 + 4c + j, j < 4).
//   scales  32 bytes per block at q4_0x16_scales_at(b, nb): the 16 f16 scales, lane order.
// Record p = [quants 2p][quants 2p + 1][scales 2p][scales 2p + 1]: nine whole cache lines, read
// front to back (a separate scale array behind the quants was a second stream to prefetch).
// A group is kQ4_0x16GroupBlockBytes per block, the same bytes as 16 GGUF rows. Rows past the
// last whole group (n_rows % 16) follow the groups in the GGUF row layout, row_bytes apart.
//
// Numerics: per output (row l, token t) one accumulator, blocks in order:
//   acc = fma(d_w[b][l] * d_x[t][b], float(sum_j q * a - 8 * sum_j a), acc)
// with the integer dot exact. The scalar reference and the SIMD kernels do exactly this, so they
// agree bit for bit, and an output does not depend on how many tokens share the call (decode and
// prefill give a token the same logits). Against q4_0_q8_0_vec_dot (which pairs blocks and sums
// lanes at the end) outputs differ by float rounding only.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

constexpr int kQ4_0x16Rows = 16;
constexpr size_t kQ4_0x16GroupBlockBytes = 16 * 18;  // 256 quant bytes + 16 f16 scales

// Offsets of block b's quants and scales within a group of nb blocks.
inline size_t q4_0x16_quants_at(int64_t b) {
  return static_cast<size_t>(b / 2) * 576 + static_cast<size_t>(b % 2) * 256;
}
inline size_t q4_0x16_scales_at(int64_t b, int64_t nb) {
  return static_cast<size_t>(b / 2) * 576 + ((b | 1) < nb ? 512 + static_cast<size_t>(b % 2) * 32 : 256);
}

// Bytes of one packed group of rows with n_cols columns (n_cols % 32 == 0).
inline size_t q4_0x16_group_bytes(int64_t n_cols) {
  return static_cast<size_t>(n_cols / 32) * kQ4_0x16GroupBlockBytes;
}

// Repacks rows [16g, 16g + 16) for g < n_groups of a GGUF Q4_0 matrix (rows `row_bytes` apart)
// into `dst` (n_groups * q4_0x16_group_bytes(n_cols) bytes). src and dst must not overlap.
void pack_q4_0x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);

// Dequantizes row `l` (< 16) of the packed group at `group` to n_cols floats (embedding lookups
// of a tied output matrix). Same values as q4_0_to_float on the original row.
void q4_0x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

// What the kernels need of each activation block besides its quants, computed once per token
// rather than once per 16 rows: terms[2 * (t * nb + b)] = -8 * sum_j a_t[b][j] (the offset term
// of the numerics above) and terms[2 * (t * nb + b) + 1] = the bits of d_x[t][b] as an f32, for
// n_tokens Q8_0 rows (x_row_bytes apart) of nb = n_cols / 32 blocks.
void q8_0_block_terms(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                      int32_t* terms);
// The same for weights stored offset by `offset` (8 here, 128 for Q8_0x16): -offset * sum(a).
void q8_0_block_terms_offset(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                             int32_t offset, int32_t* terms);

// Products of packed groups with Q8_0 tokens: for g < n_groups, t < n_tokens, l < 16,
//   y[t * y_stride + 16 g + l] = row (16g + l) . token t
// where group g is at groups + g * q4_0x16_group_bytes(n), token t's quants at x + t * x_row_bytes
// and its q8_0_block_terms at terms + t * 2 * (n / 32). Any n_tokens >= 1.
using Q4_0x16GemmFn = void (*)(const void* groups, int64_t n_groups, const void* x,
                               size_t x_row_bytes, const int32_t* terms, int64_t n_tokens,
                               float* y, int64_t y_stride, int64_t n);

// IQ4_NL weights ("IQ4_NLx16") in the same layout: an IQ4_NL block is a Q4_0 block (f16 scale,
// 16 bytes of nibbles in the same order) whose nibble i means kIQ4Levels[i] instead of i - 8, so
// pack_q4_0x16 packs it unchanged. Its kernels look each nibble up as the level + 128 (1..241,
// an unsigned byte for vpdpbusd) and start from -128 * sum(a) (q8_0_block_terms_x128):
//   acc = fma(d_w * d_x, float(sum_j (level + 128) * a - 128 * sum_j a), acc)
// with the integer dot exact; scalar reference and SIMD kernels agree bit for bit.
void iq4_nlx16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

namespace scalar {
void q4_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
// Q4_0x16GemmFn's contract over IQ4_NLx16 groups (terms from q8_0_block_terms_x128).
void iq4_nlx16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                         const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                         int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
