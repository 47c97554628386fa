// Q4_K weights repacked at load into groups of 16 interleaved rows ("Q4_Kx16"), for the same
// reason as Q4_0x16 (packed_q4_0.h): one vpdpbusd against 4 broadcast activation bytes advances
// 16 rows, and each super-block's 6-bit scales and mins are unpacked once at load instead of
// once per row and token.
//
// Layout of one group (16 rows r = 16g + l; nsb = n_cols / 256 super-blocks per row), one
// kQ4_Kx16SuperBlockBytes record per super-block, in order:
//   quants  2048 bytes: for k < 4 (the GGUF qs group of elements 64k..64k+63) and c < 8, 64
//           bytes holding, for each lane l, bytes qs[32k + 4c .. 32k + 4c + 3] of row l verbatim:
//           low nibbles are elements 64k + 4c + j (sub-block 2k), high nibbles elements
//           64k + 32 + 4c + j (sub-block 2k + 1), j < 4. Offset k * 512 + c * 64.
//   scales  128 bytes: sub-block j's 6-bit scale of lane l at j * 16 + l.
//   mins    128 bytes: for pair p < 4, lane l: the mins of sub-blocks 2p and 2p + 1 at
//           p * 32 + 2l and p * 32 + 2l + 1 (zero-extended to int16, lane l's pair).
//   d       16 f16 super-block scales, lane order.
//   dmin    16 f16 super-block min scales, lane order.
// 2368 bytes against 16 * 144 = 2304 in GGUF rows (3% more). Rows past the last whole group
// follow in the GGUF row layout, row_bytes apart.
//
// Numerics: per output (row l, token t), one accumulator, super-blocks in order:
//   sumi = sum_j sc_j * dot_j,  summ = sum_j m_j * (bsums[2j] + bsums[2j + 1])   (exact int32)
//   acc = fma(d_l * d_t, float(sumi), acc);  acc = fma(-(dmin_l * d_t), float(summ), acc)
// The scalar reference and the SIMD kernels agree bit for bit; against q4_k_q8_k_vec_dot outputs
// differ by float rounding only.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

constexpr int kQ4_Kx16Rows = 16;
constexpr size_t kQ4_Kx16SuperBlockBytes = 2048 + 128 + 128 + 32 + 32;

inline size_t q4_kx16_group_bytes(int64_t n_cols) {
  return static_cast<size_t>(n_cols / 256) * kQ4_Kx16SuperBlockBytes;
}

// Repacks rows [16g, 16g + 16) for g < n_groups of a GGUF Q4_K matrix into `dst`
// (n_groups * q4_kx16_group_bytes(n_cols) bytes).
void pack_q4_kx16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);

// Dequantizes row `l` (< 16) of the packed group at `group`: q4_k_to_float's values.
void q4_kx16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

// The per-super-block activation term of the mins: for token t, super-block s and pair p < 4,
// pairs[(t * nsb + s) * 4 + p] holds b(2p) in its low and b(2p + 1) in its high 16 bits, where
// b(j) = bsums[2j] + bsums[2j + 1] of Q8_K row t (as vpdpwssd wants them).
void q8_k_min_pairs(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                    int32_t* pairs);

// y[t * y_stride + 16 g + l] = row (16g + l) . token t for g < n_groups, t < n_tokens, with
// tokens as Q8_K rows x_row_bytes apart and their q8_k_min_pairs at pairs + t * 4 * (n / 256).
using Q4_Kx16GemmFn = void (*)(const void* groups, int64_t n_groups, const void* x,
                               size_t x_row_bytes, const int32_t* pairs, int64_t n_tokens,
                               float* y, int64_t y_stride, int64_t n);

namespace scalar {
void q4_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
