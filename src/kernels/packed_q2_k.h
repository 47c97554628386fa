// Q2_K weights repacked at load into groups of 16 interleaved rows ("Q2_Kx16"), for the reason
// of Q4_Kx16 (packed_q4_k.h): one vpdpbusd against 4 broadcast activation bytes advances 16
// rows, and each super-block's sub-block scales and mins are laid out once at load for all 16
// rows instead of being unpacked per row and token.
//
// Layout of one group (16 rows r = 16g + l; nsb = n_cols / 256 super-blocks per row), one
// 1344-byte record per super-block (16 x 84, the GGUF bytes), in order:
//   quants  1024 bytes: for sub-block j < 16 (elements 16j .. 16j + 15) 64 bytes, lane l's four
//           bytes at j * 64 + 4l: byte k (< 4) holds in bits 2r, 2r + 1 the level (0..3) of
//           element 16j + 4r + k, r < 4 (so shift 2r and mask 3 gives four bytes per lane that
//           meet the activations 16j + 4r .. 16j + 4r + 3, one dword).
//   scales  256 bytes: for pair p < 8, lane l: row l's GGUF scale bytes of sub-blocks 2p and
//           2p + 1 (scale in the low nibble, min in the high) at p * 32 + 2l and p * 32 + 2l + 1.
//   d       16 f16 super-block scales, lane order; then dmin, 16 f16.
// Rows past the last whole group follow in the GGUF row layout, row_bytes apart.
//
// Numerics: per output (row l, token t), one accumulator, super-blocks in order:
//   sumi = sum_j sc_j * dot_j,  summ = sum_j m_j * bsums[j]   (exact int32)
//   acc = fma(d_l * d_t, float(sumi), acc);  acc = fma(-(dmin_l * d_t), float(summ), acc)
// The scalar reference and the SIMD kernels agree bit for bit; against q2_k_q8_k_vec_dot outputs
// differ by float rounding only.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

constexpr size_t kQ2_Kx16SuperBlockBytes = 1024 + 256 + 32 + 32;

inline size_t q2_kx16_group_bytes(int64_t n_cols) {
  return static_cast<size_t>(n_cols / 256) * kQ2_Kx16SuperBlockBytes;
}

void pack_q2_kx16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
// Row l (< 16) of the packed group: q2_k_to_float's values.
void q2_kx16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

// The mins' activation term: for token t, super-block s and pair p < 8,
// pairs[(t * nsb + s) * 8 + p] holds bsums[2p] in its low and bsums[2p + 1] in its high 16 bits
// (Q8_K row t; as vpdpwssd wants them).
void q8_k_bsum_pairs(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                     int32_t* pairs);

namespace scalar {
// Q4_Kx16GemmFn's contract over Q2_Kx16 groups (pairs from q8_k_bsum_pairs, 8 per super-block).
void q2_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
