// Q4_0 weights repacked at load into groups of 16 interleaved rows ("Q4_0x16"), the layout the
// VNNI matmul wants: one 512-bit register holds the same 4 bytes of 16 rows, so a single
// vpdpbusd against 4 broadcast activation bytes advances 16 outputs, and the 16 rows' block
// scales sit next to each other (one f16 -> f32 conversion for all 16). The GGUF layout, one
// row after another with an f16 scale per 18-byte block, costs a nibble shuffle, four scalar
// scale conversions and a horizontal sum per row instead (docs/PERFORMANCE.md).
//
// Layout of one group (16 rows r = 16g + l, l < 16; nb = n_cols / 32 blocks per row):
//   quants  nb * 256 bytes: block b at offset b * 256 holds four 64-byte chunks; chunk c holds,
//           for each lane l, bytes qs[4c .. 4c + 3] of row l's block b verbatim (so the low
//           nibbles are elements 4c + j, the high nibbles elements 16 + 4c + j, j < 4).
//   scales  nb * 32 bytes after the quants: block b's 16 f16 scales, lane order.
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

// The per-block activation term of the numerics above: bias[t * nb + b] = -8 * sum_j a_t[b][j]
// for n_tokens Q8_0 rows (x_row_bytes apart) of nb = n_cols / 32 blocks.
void q8_0_block_bias(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                     int32_t* bias);

// Products of packed groups with Q8_0 tokens: for g < n_groups, t < n_tokens, l < 16,
//   y[t * y_stride + 16 g + l] = row (16g + l) . token t
// where group g is at groups + g * q4_0x16_group_bytes(n), token t's quants at x + t * x_row_bytes
// and its q8_0_block_bias at bias + t * (n / 32). Any n_tokens >= 1.
using Q4_0x16GemmFn = void (*)(const void* groups, int64_t n_groups, const void* x,
                               size_t x_row_bytes, const int32_t* bias, int64_t n_tokens, float* y,
                               int64_t y_stride, int64_t n);

namespace scalar {
void q4_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* bias, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
