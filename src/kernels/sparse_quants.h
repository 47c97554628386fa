// Tessera's 2:4 sparse weight types F16_2of4, Q8_0_2of4 and Q4_0_2of4 (layouts in
// sparse_blocks.h): the scalar references, the encoder that takes an explicit keep-mask (pruning
// decides it; src/model/prune.h), the mask check that loading runs, the AVX2 / AVX-512 vec_dots,
// and the hooks that install them in the kernel table. Activations for vec_dot are what the
// dense type uses: f32 for F16_2of4, Q8_0 for the other two. Every `n` is a count of weights and
// a multiple of the type's block (32, 32, 64). The kernels read only the packed bytes.
// Precondition of every kernel: the masks are valid 2:4 masks (sparse_masks_valid); files are
// checked when they are opened (gguf_reader), so a hostile mask is an error, not a wild read.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "tessera/kernels/dtype.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/sparse_blocks.h"

namespace tessera::kernels {

// Whether `t` is one of the 2:4 types, and the dense type it packs (F16, Q8_0, Q4_0).
bool is_2of4_dtype(DType t);
// Precondition: is_2of4_dtype(t).
DType dense_type_of_2of4(DType t);
// The 2:4 type packing `dense` (F16, Q8_0 or Q4_0), or nullopt for another type.
std::optional<DType> sparse_2of4_type_for(DType dense);

// Writes row `src` (n weights) in 2:4 type `t`, keeping exactly the weights with keep[j] != 0.
// The kept values are encoded as the dense type would encode the row with the others set to
// zero (F16: each rounded to f16; Q8_0: d = max |kept| / 127 per 32 weights, q = round(x / d);
// Q4_0: Q4_0's quantizer over the 32 kept values of each 64 weights). Preconditions:
// is_2of4_dtype(t), n a multiple of t's block size, exactly two of every aligned group of four
// keep entries nonzero (checked: aborts otherwise, a bug in the caller).
void encode_2of4_row(DType t, const float* src, const uint8_t* keep, void* dst, int64_t n);

// Index of the first block of `n_bytes` of type `t` whose mask is not a 2:4 mask, or -1 when all
// are valid. Precondition: is_2of4_dtype(t) and n_bytes a multiple of its block bytes.
int64_t first_invalid_2of4_block(DType t, const void* data, size_t n_bytes);

namespace scalar {

// to_float: the dense row, zeros at pruned positions. from_float: keeps the two of each four
// weights of largest magnitude (the earlier one on ties), then encode_2of4_row.
void f16_2of4_to_float(const void* src, float* dst, int64_t n);
void f16_2of4_from_float(const float* src, void* dst, int64_t n);
// sum over kept weights in position order of w * x (f32 activations); also the vec_dot.
float f16_2of4_dot(const void* row, const float* x, int64_t n);
float f16_2of4_vec_dot(const void* row, const void* x, int64_t n);

void q8_0_2of4_to_float(const void* src, float* dst, int64_t n);
void q8_0_2of4_from_float(const float* src, void* dst, int64_t n);
float q8_0_2of4_dot(const void* row, const float* x, int64_t n);  // x: f32
// Against Q8_0 activations, per block exactly in integers s = sum over kept q * a_x, then
// block = (d * d_x) * float(s), blocks summed in order. The AVX2 variant matches bit for bit.
float q8_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n);

void q4_0_2of4_to_float(const void* src, float* dst, int64_t n);
void q4_0_2of4_from_float(const float* src, void* dst, int64_t n);
float q4_0_2of4_dot(const void* row, const float* x, int64_t n);  // x: f32
// Against Q8_0 activations (two activation blocks per weight block): s_h = sum over the kept
// weights of half h of (q - 8) * a_x, block = d * (d_x0 * float(s_0) + d_x1 * float(s_1)),
// blocks summed in order. The AVX2 variant matches bit for bit.
float q4_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n);

}  // namespace scalar

// Fills the three rows of `t` with the scalar references.
void install_scalar_sparse_rows(KernelTable& t);

// AVX2 (+F16C) vec_dots (avx2_sparse_quants.cpp): kept values placed by pshufb from a table of
// the masks. Q8_0_2of4 / Q4_0_2of4 bit-identical to scalar; F16_2of4 within f32 rounding of a
// different summation order. Precondition: cpu_features().has_avx2_set().
namespace avx2 {
float f16_2of4_vec_dot(const void* row, const void* x, int64_t n);
float q8_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float q4_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n);
}  // namespace avx2

// AVX-512 (BW, VL, VNNI) vec_dots (avx512_sparse_quants.cpp): kept values placed by a masked
// shuffle whose control is computed from the mask in registers (vpexpandb/w measured slower on
// Zen 4). All three within f32 rounding of the references (another summation order: one
// accumulator over pairs of blocks, as the dense Q8_0 kernel). Precondition:
// cpu_features().has_avx512_set().
namespace avx512 {
float f16_2of4_vec_dot(const void* row, const void* x, int64_t n);
float q8_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n);
float q4_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n);
}  // namespace avx512

// Replace the rows' dot / vec_dot with the SIMD variants. Preconditions as above, and the rows
// filled by install_scalar_sparse_rows.
void install_avx2_sparse_rows(KernelTable& t);
void install_avx512_sparse_rows(KernelTable& t);

}  // namespace tessera::kernels
