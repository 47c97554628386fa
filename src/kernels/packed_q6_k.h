// Q6_K weights repacked at load into groups of 16 interleaved rows ("Q6_Kx16"), for the reason
// of Q4_Kx16 (packed_q4_k.h): one vpdpbusd against 4 broadcast activation bytes advances 16
// rows, and each super-block's sub-block scales are laid out once at load for all 16 rows.
// Q4_K_M files store output.weight and about half of attn_v / ffn_down in Q6_K.
//
// Layout of one group (16 rows r = 16g + l; nsb = n_cols / 256 super-blocks per row), one
// 3360-byte record per super-block (16 x 210, the GGUF bytes), in order:
//   quants  3072 bytes: for sub-block j < 16 (elements 16j .. 16j + 15) three 64-byte planes
//           p < 3 at j * 192 + p * 64, lane l's four bytes at 4l: byte k (< 4) holds in bits 0-5
//           the 6-bit value (0..63) of element 16j + 4p + k and in bits 6-7 bits 4 - 2p and
//           5 - 2p of the value of element 16j + 12 + k. So mask 0x3f gives the 4 bytes per lane
//           that meet activation dword p of the sub-block, and the planes' top bits, shifted
//           down by 2, 4 and 6 and or-ed, give those of dword 3.
//   scales  256 bytes: for pair p < 8, lane l: row l's int8 scales of sub-blocks 2p and 2p + 1
//           at p * 32 + 2l and p * 32 + 2l + 1 (sign-extended to int16, lane l's pair).
//   d       16 f16 super-block scales, lane order.
// Rows past the last whole group follow in the GGUF row layout, row_bytes apart.
//
// Numerics: per output (row l, token t), one accumulator, super-blocks in order:
//   sumi = sum_j sc_j * dot_j,  summ = sum_j sc_j * bsums[j],  isum = sumi - 32 * summ
//   acc = fma(d_l * d_t, float(isum), acc)
// where dot_j = sum of value * activation over sub-block j (values 0..63, the +32 offset taken
// out through the bsums, as q6_k_q8_k_vec_dot does). All integer steps are exact in int32, in any
// order, for any weight bytes and activation quants in [-128, 127]: |dot_j| <= 16 * 63 * 128 =
// 129024, |sumi| <= 16 * 128 * 129024 < 2^28, |bsums[j]| <= 2048, |32 * summ| <= 2^27, so
// |isum| < 2^28.6. The scalar reference and the SIMD kernels agree bit for bit; against
// q6_k_q8_k_vec_dot outputs differ by float rounding only.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

constexpr size_t kQ6_Kx16SuperBlockBytes = 3072 + 256 + 32;

inline size_t q6_kx16_group_bytes(int64_t n_cols) {
  return static_cast<size_t>(n_cols / 256) * kQ6_Kx16SuperBlockBytes;
}

void pack_q6_kx16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
// Row l (< 16) of the packed group: q6_k_to_float's values.
void q6_kx16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

namespace scalar {
// Q4_Kx16GemmFn's contract over Q6_Kx16 groups (pairs from q8_k_bsum_pairs, packed_q2_k.h, 8 per
// super-block; the reference reads the bsums from the tokens themselves).
void q6_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n);
}  // namespace scalar

}  // namespace tessera::kernels
