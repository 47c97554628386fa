// Q8_0_2of4 weights (sparse_blocks.h) repacked at load into groups of 16 interleaved rows
// ("Q8_0_2of4x16"), the layout the gather kernel wants: instead of expanding each row's kept
// weights back to their dense positions (a per-row shuffle whose control comes from prefix sums
// over the mask, sparse_quants.h), the kernel GATHERS THE ACTIVATIONS: each kept value carries
// its 2-bit position within its group of four, so its activation byte's index in the block is
// 8c + 4 (j / 2) + code, computed for 16 rows at once (vpmultishiftqb + vpternlogd) and applied
// with one vpermb to the block's 32 activation bytes; vpdpbusd then multiplies only the 16 kept
// values per 32 weights (half the dense type's products). Same bytes as the file: 22 per row and
// block (the codes take the mask's 32 bits).
//
// Layout of one group (16 rows r = 16g + l; nb = n_cols / 32 blocks), 704-byte records of two
// blocks [quants 2p][quants 2p + 1][codes 2p][codes 2p + 1][scales 2p][scales 2p + 1] (eleven
// whole cache lines; a last odd block takes a 352-byte record [quants][codes][scales]):
//   quants  256 bytes: four 64-byte chunks; chunk c holds, for each lane l, the kept values
//           4c .. 4c + 3 (position order) of row l's block, each XOR 0x80 (q + 128, unsigned for
//           vpdpbusd). They lie in the block's weights 8c .. 8c + 7 (groups 2c and 2c + 1).
//   codes   64 bytes: dword l = row l; its byte c holds the positions (0..3) within their group of
//           kept values 4c + j at bits 2j .. 2j + 1. Kept value 4c + j is weight
//           8c + 4 (j / 2) + code of the block.
//   scales  32 bytes: the 16 f16 scales, lane order.
// Rows past the last whole group follow in the GGUF row layout, row_bytes apart.
//
// Numerics: per output one accumulator, blocks in order:
//   acc = fma(d_w * d_x, float(sum_kept (q + 128) * a - 128 * sum_kept a), acc)
// with the integer dot exact (= sum_kept q * a). The scalar reference and the SIMD kernel agree
// bit for bit; against q8_0_2of4_q8_0_vec_dot (which sums its blocks in another order) outputs
// differ by float rounding only. The per-row correction sum_kept a is computed in the kernel from
// the gathered bytes (no extra stored bytes).
// Precondition of every function here: the masks are valid 2:4 masks (checked when a file is
// opened, sparse_quants.h); pack_q8_0_2of4x16 aborts on an invalid one (a caller's bug).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

inline size_t q8_0_2of4x16_quants_at(int64_t b) {
  return static_cast<size_t>(b / 2) * 704 + static_cast<size_t>(b % 2) * 256;
}
inline size_t q8_0_2of4x16_codes_at(int64_t b, int64_t nb) {
  return static_cast<size_t>(b / 2) * 704 + ((b | 1) < nb ? 512 + static_cast<size_t>(b % 2) * 64 : 256);
}
inline size_t q8_0_2of4x16_scales_at(int64_t b, int64_t nb) {
  return static_cast<size_t>(b / 2) * 704 + ((b | 1) < nb ? 640 + static_cast<size_t>(b % 2) * 32 : 320);
}
// 16 rows of 22-byte blocks: the file's bytes.
inline size_t q8_0_2of4x16_group_bytes(int64_t n_cols) { return static_cast<size_t>(n_cols / 32) * 352; }

// Repacks rows [16g, 16g + 16), g < n_groups, of a Q8_0_2of4 matrix (rows row_bytes apart) into
// dst (n_groups * q8_0_2of4x16_group_bytes(n_cols) bytes, not overlapping src).
void pack_q8_0_2of4x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
// Row l (< 16) of a packed group as floats: the same values as q8_0_2of4_to_float of the row.
void q8_0_2of4x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst);

// The kernels read only d_x of each activation block: terms as q8_0_block_terms (packed_q4_0.h),
// terms[2 (t nb + b) + 1] the bits of d_x[t][b] as an f32 (the even entries unused).

namespace scalar {
// Q4_0x16GemmFn's contract over Q8_0_2of4x16 groups.
void q8_0_2of4x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x,
                            size_t x_row_bytes, const int32_t* terms, int64_t n_tokens, float* y,
                            int64_t y_stride, int64_t n);
}  // namespace scalar

// AVX-512 VBMI (vpermb, vpmultishiftqb) + VNNI kernel (avx512vbmi_sparse_packed.cpp), bit for
// bit the scalar reference. Precondition: cpu_features().has_avx512_set() && avx512_vbmi.
namespace avx512vbmi {
void q8_0_2of4x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x,
                            size_t x_row_bytes, const int32_t* terms, int64_t n_tokens, float* y,
                            int64_t y_stride, int64_t n);
}  // namespace avx512vbmi

}  // namespace tessera::kernels
