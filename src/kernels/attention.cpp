#include "tessera/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tessera/base/check.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {
constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMaxGroup = 64;
}  // namespace

void attention_row(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                   int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                   float* out) {
  kernel_table().attention_row(q, kv, n_pos, n_heads, n_kv_heads, head_dim, kv_begin, kv_end, out);
}

void attention_rows(const float* q, size_t q_stride, const int64_t* n_pos, int64_t n_rows,
                    const KvRows& kv, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride) {
  TS_CHECK(n_rows >= 1 && n_rows <= kMaxAttentionRows);
  kernel_table().attention_rows(q, q_stride, n_pos, n_rows, kv, n_heads, n_kv_heads, head_dim,
                                kv_begin, kv_end, out, out_stride);
}

void attention_rows_by_row(AttentionRowFn row, const float* q, size_t q_stride,
                           const int64_t* n_pos, int64_t n_rows, const KvRows& kv,
                           int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                           int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride) {
  for (int64_t r = 0; r < n_rows; ++r) {
    row(q + r * q_stride, kv, n_pos[r], n_heads, n_kv_heads, head_dim, kv_begin, kv_end,
        out + r * out_stride);
  }
}

namespace {

// The reference recurrence; softcap 0: scores as they are.
void attention_row_impl(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                        int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                        float softcap, float* out) {
  const int64_t H = head_dim;
  const int64_t group = n_heads / n_kv_heads;
  TS_CHECK(n_pos >= 1 && H <= kMaxHeadDim && group <= kMaxGroup && softcap >= 0.0f);
  const DTypeKernels& conv = kernels_for(scalar_kernel_table(), kv.dtype);
  const size_t elem_bytes = kv.dtype == DType::kF16 ? 2 : 4;
  const float scale = 1.0f / std::sqrt(static_cast<float>(H));
  const float inv_cap = softcap > 0.0f ? 1.0f / softcap : 0.0f;
  float k_row[kMaxHeadDim];
  float v_row[kMaxHeadDim];
  float max_score[kMaxGroup];
  float sum[kMaxGroup];
  for (int64_t kvh = kv_begin; kvh < kv_end; ++kvh) {
    const int64_t h0 = kvh * group;
    for (int64_t g = 0; g < group; ++g) {
      max_score[g] = -std::numeric_limits<float>::infinity();
      sum[g] = 0.0f;
      std::fill(out + (h0 + g) * H, out + (h0 + g + 1) * H, 0.0f);
    }
    const size_t head_offset = static_cast<size_t>(kvh * H) * elem_bytes;
    for (int64_t p = 0; p < n_pos; ++p) {
      const size_t row = kv.offset(p) + head_offset;
      conv.to_float(kv.k + row, k_row, H);
      conv.to_float(kv.v + row, v_row, H);
      for (int64_t g = 0; g < group; ++g) {
        const float* qh = q + (h0 + g) * H;
        float s = 0.0f;
        for (int64_t i = 0; i < H; ++i) s += qh[i] * k_row[i];
        s *= scale;
        if (softcap > 0.0f) s = softcap * std::tanh(s * inv_cap);
        float* acc = out + (h0 + g) * H;
        if (s > max_score[g]) {  // new max: rescale what was accumulated so far
          const float r = std::exp(max_score[g] - s);
          sum[g] *= r;
          for (int64_t i = 0; i < H; ++i) acc[i] *= r;
          max_score[g] = s;
        }
        const float w = std::exp(s - max_score[g]);
        sum[g] += w;
        for (int64_t i = 0; i < H; ++i) acc[i] += w * v_row[i];
      }
    }
    for (int64_t g = 0; g < group; ++g) {
      const float inv = 1.0f / sum[g];
      float* acc = out + (h0 + g) * H;
      for (int64_t i = 0; i < H; ++i) acc[i] *= inv;
    }
  }
}

}  // namespace

void attention_row_softcap(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                           int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                           float softcap, float* out) {
  TS_CHECK(softcap > 0.0f);
  attention_row_impl(q, kv, n_pos, n_heads, n_kv_heads, head_dim, kv_begin, kv_end, softcap, out);
}

namespace scalar {

void attention_rows(const float* q, size_t q_stride, const int64_t* n_pos, int64_t n_rows,
                    const KvRows& kv, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride) {
  attention_rows_by_row(scalar::attention_row, q, q_stride, n_pos, n_rows, kv, n_heads, n_kv_heads,
                        head_dim, kv_begin, kv_end, out, out_stride);
}

void attention_row(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                   int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                   float* out) {
  attention_row_impl(q, kv, n_pos, n_heads, n_kv_heads, head_dim, kv_begin, kv_end, 0.0f, out);
}

}  // namespace scalar
}  // namespace tessera::kernels
