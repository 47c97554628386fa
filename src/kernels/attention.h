// Attention over a KV cache for one query row: for each head, softmax(q · K[0..n) / sqrt(H)) · V,
// computed in one pass with an online softmax (running max and sum, rescaling the accumulator
// when the max grows), so no score buffer is needed and long contexts stay numerically stable.
// Heads that share a KV head (grouped-query attention) are processed together, so each cached
// K and V row is read and converted once per KV head, not once per query head.
// Shapes: H = head_dim, NH = query heads, NKV = KV heads (NH % NKV == 0).
// Thread-safety: pure function; callers may run different rows or heads on different threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/dtype.h"

namespace tessera::kernels {

// K and V of one sequence in one layer. Each row holds NKV * H values of `dtype` (f32 or f16);
// KV head h starts at element h * H. Positions are counted from `first` (0 but for sliding-window
// attention, which attends to the cache's positions [first, first + n_pos) by passing a view
// that starts there): view position p is cache position c = first + p. Contiguous
// (blocks == nullptr): c's row starts at k + c * row_stride bytes. Paged: c lives in block
// blocks[c / block_size], at k + blocks[c / block_size] * block_stride + (c % block_size) *
// row_stride (same for v).
struct KvRows {
  DType dtype = DType::kF32;
  const std::byte* k = nullptr;
  const std::byte* v = nullptr;
  size_t row_stride = 0;
  const int32_t* blocks = nullptr;  // block table, or null for contiguous rows
  int64_t block_size = 0;           // positions per block (paged only)
  size_t block_stride = 0;          // bytes between blocks (paged only)
  int64_t first = 0;                // cache position of view position 0

  // Byte offset of view position p's row from k (or v).
  size_t offset(int64_t p) const {
    p += first;
    if (blocks == nullptr) return static_cast<size_t>(p) * row_stride;
    return static_cast<size_t>(blocks[p / block_size]) * block_stride +
           static_cast<size_t>(p % block_size) * row_stride;
  }
};

// q: [NH * H] f32 (already rotated); out: [NH * H] f32. Attends to positions [0, n_pos).
// `kv_heads` selects a range [kv_begin, kv_end) of KV heads to process (with their query heads),
// so callers can split work by KV head. Preconditions: n_pos >= 1, H <= 256, NH / NKV <= 64.
// Dispatches to the kernel table's implementation (scalar reference or SIMD).
void attention_row(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                   int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                   float* out);

using AttentionRowFn = void (*)(const float* q, const KvRows& kv, int64_t n_pos,
                                int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                                int64_t kv_begin, int64_t kv_end, float* out);

// Several query rows of one sequence at once (the rows of a prefill chunk): row r (q at
// q + r * q_stride, out at out + r * out_stride, in floats) attends to positions [0, n_pos[r]),
// exactly as attention_row would. Kernels may read each K and V row once for all the rows and
// their heads; the result equals attention_row's within float rounding. Preconditions: those of
// attention_row for every row; 1 <= n_rows <= kMaxAttentionRows.
constexpr int64_t kMaxAttentionRows = 16;
void attention_rows(const float* q, size_t q_stride, const int64_t* n_pos, int64_t n_rows,
                    const KvRows& kv, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride);

using AttentionRowsFn = void (*)(const float* q, size_t q_stride, const int64_t* n_pos,
                                 int64_t n_rows, const KvRows& kv, int64_t n_heads,
                                 int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin,
                                 int64_t kv_end, float* out, size_t out_stride);

// attention_rows as `row` (an attention_row implementation) called once per row.
void attention_rows_by_row(AttentionRowFn row, const float* q, size_t q_stride,
                           const int64_t* n_pos, int64_t n_rows, const KvRows& kv,
                           int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                           int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride);

// attention_row with soft-capped scores (Gemma 2): each score s = q · k / sqrt(H) becomes
// softcap * tanh(s / softcap) before the softmax. The scalar reference only, for every CPU
// (no SIMD version yet: the cap's tanh per score sits inside the inner loop the SIMD kernels
// vectorize). Preconditions: those of attention_row; softcap > 0.
void attention_row_softcap(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                           int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                           float softcap, float* out);

namespace scalar {
// The reference: one position at a time, exact online-softmax recurrence.
void attention_row(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                   int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                   float* out);
// attention_row per row.
void attention_rows(const float* q, size_t q_stride, const int64_t* n_pos, int64_t n_rows,
                    const KvRows& kv, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride);
}  // namespace scalar

namespace avx2 {
// Blocks of 8 positions: K and V rows converted once per group of query heads, 8 scores per
// vector, vectorized exp, one max/rescale per block. Equals the reference within float rounding
// (block-wise rescaling, a polynomial exp). Falls back to the reference when H % 8 != 0.
void attention_row(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                   int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                   float* out);
// avx2::attention_row per row.
void attention_rows(const float* q, size_t q_stride, const int64_t* n_pos, int64_t n_rows,
                    const KvRows& kv, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride);
}  // namespace avx2

namespace avx512 {
// Query vectors as lanes: the (row, head) pairs of a KV head, 16 to a register, so one block of
// 16 positions is 16 registers of scores, one per position (K broadcast element by element
// against the transposed queries), the online softmax runs lane-wise with no horizontal
// reductions, and V is accumulated into a transposed output the same way. Each K and V row is
// converted once per block of 16 lanes. Equals the reference within float rounding (queries
// pre-scaled by 1/sqrt(H), block-wise rescaling, a polynomial exp). Falls back to
// avx2::attention_row per row when H % 16 != 0. Precondition: cpu_features().has_avx512_set().
void attention_rows(const float* q, size_t q_stride, const int64_t* n_pos, int64_t n_rows,
                    const KvRows& kv, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride);
}  // namespace avx512

}  // namespace tessera::kernels
