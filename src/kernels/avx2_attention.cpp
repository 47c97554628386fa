// AVX2/FMA/F16C attention over the KV cache (see attention.h for the contract).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tessera/base/check.h"
#include "tessera/kernels/attention.h"

namespace tessera::kernels::avx2 {
namespace {

constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMaxGroup = 64;
constexpr int64_t kBlock = 32;  // positions per softmax rescale

// Converts H values of one head (f16 or f32) to floats in `dst`. H % 8 == 0.
inline void load_head(const std::byte* src, bool f16, int64_t H, float* dst) {
  if (f16) {
    const auto* s = reinterpret_cast<const __m128i*>(src);
    for (int64_t i = 0; i < H; i += 8) {
      _mm256_store_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(s + i / 8)));
    }
  } else {
    const auto* s = reinterpret_cast<const float*>(src);
    for (int64_t i = 0; i < H; i += 8) _mm256_store_ps(dst + i, _mm256_loadu_ps(s + i));
  }
}

inline float hsum(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

inline float dot(const float* a, const float* b, int64_t H) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= H; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_load_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_load_ps(b + i + 8), acc1);
  }
  if (i < H) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_load_ps(b + i), acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

}  // namespace

void attention_row(const float* q, const KvRows& kv, int64_t n_pos, int64_t n_heads,
                   int64_t n_kv_heads, int64_t head_dim, int64_t kv_begin, int64_t kv_end,
                   float* out) {
  const int64_t H = head_dim;
  const int64_t group = n_heads / n_kv_heads;
  if (H % 8 != 0) {
    scalar::attention_row(q, kv, n_pos, n_heads, n_kv_heads, head_dim, kv_begin, kv_end, out);
    return;
  }
  TS_CHECK(n_pos >= 1 && H <= kMaxHeadDim && group <= kMaxGroup);
  const bool f16 = kv.dtype == DType::kF16;
  const size_t elem_bytes = f16 ? 2 : 4;
  const float scale = 1.0f / std::sqrt(static_cast<float>(H));
  alignas(32) float row[kMaxHeadDim];
  alignas(32) float score[kMaxGroup][kBlock];
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
    for (int64_t p0 = 0; p0 < n_pos; p0 += kBlock) {
      const int64_t nb = std::min(kBlock, n_pos - p0);
      // Scores of the block for every query head of the group; K is converted once per row.
      for (int64_t j = 0; j < nb; ++j) {
        load_head(kv.k + kv.offset(p0 + j) + head_offset, f16, H, row);
        for (int64_t g = 0; g < group; ++g) score[g][j] = dot(q + (h0 + g) * H, row, H) * scale;
      }
      // One rescale per block: new running max, weights relative to it.
      for (int64_t g = 0; g < group; ++g) {
        float block_max = score[g][0];
        for (int64_t j = 1; j < nb; ++j) block_max = std::max(block_max, score[g][j]);
        if (block_max > max_score[g]) {
          const float r = std::exp(max_score[g] - block_max);  // 0 on the first block
          sum[g] *= r;
          float* acc = out + (h0 + g) * H;
          const __m256 rv = _mm256_set1_ps(r);
          for (int64_t i = 0; i < H; i += 8) {
            _mm256_storeu_ps(acc + i, _mm256_mul_ps(_mm256_loadu_ps(acc + i), rv));
          }
          max_score[g] = block_max;
        }
        for (int64_t j = 0; j < nb; ++j) {
          score[g][j] = std::exp(score[g][j] - max_score[g]);
          sum[g] += score[g][j];
        }
      }
      // Weighted V; V is converted once per row for all heads of the group.
      for (int64_t j = 0; j < nb; ++j) {
        load_head(kv.v + kv.offset(p0 + j) + head_offset, f16, H, row);
        for (int64_t g = 0; g < group; ++g) {
          float* acc = out + (h0 + g) * H;
          const __m256 w = _mm256_set1_ps(score[g][j]);
          for (int64_t i = 0; i < H; i += 8) {
            _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(w, _mm256_load_ps(row + i),
                                                      _mm256_loadu_ps(acc + i)));
          }
        }
      }
    }
    for (int64_t g = 0; g < group; ++g) {
      const __m256 inv = _mm256_set1_ps(1.0f / sum[g]);
      float* acc = out + (h0 + g) * H;
      for (int64_t i = 0; i < H; i += 8) {
        _mm256_storeu_ps(acc + i, _mm256_mul_ps(_mm256_loadu_ps(acc + i), inv));
      }
    }
  }
}

}  // namespace tessera::kernels::avx2
