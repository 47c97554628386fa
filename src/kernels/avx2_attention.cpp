// AVX2/FMA/F16C attention over the KV cache (see attention.h for the contract).
// Per KV head and block of 8 positions: the 8 K rows are converted once for all query heads of
// the group; each head's 8 dot products are reduced together into one vector of scores (a
// transpose-and-add, not 8 horizontal sums); the online-softmax update and exp are vectorized;
// the 8 V rows are converted once and accumulated into every head with FMAs.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tessera/base/check.h"
#include "tessera/kernels/attention.h"

#include "avx2_exp.h"

namespace tessera::kernels::avx2 {
namespace {

constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMaxGroup = 64;
constexpr int64_t kBlock = 8;  // positions per vector of scores

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

// Lane j of the result = the sum of the eight lanes of v[j].
inline __m256 reduce8(const __m256 v[8]) {
  const __m256 t0 = _mm256_hadd_ps(v[0], v[1]);
  const __m256 t1 = _mm256_hadd_ps(v[2], v[3]);
  const __m256 t2 = _mm256_hadd_ps(v[4], v[5]);
  const __m256 t3 = _mm256_hadd_ps(v[6], v[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1);  // per 128-bit half: partial sums of v0..v3
  const __m256 u1 = _mm256_hadd_ps(t2, t3);  // of v4..v7
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// e^x for x <= 0 (softmax weights relative to the running max); lanes below -87 (including
// -inf) give 0.
inline __m256 exp_nonpositive(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm256_andnot_ps(underflow, exp_clamped(x));
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
  const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(static_cast<float>(H)));
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  alignas(32) float rows[kBlock][kMaxHeadDim];
  alignas(32) float block_weights[kMaxGroup][kBlock];
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
    const size_t head_bytes = static_cast<size_t>(H) * elem_bytes;
    for (int64_t p0 = 0; p0 < n_pos; p0 += kBlock) {
      const int64_t nb = std::min(kBlock, n_pos - p0);
      // The next block's K and V rows, requested now: the cache of a batch of sequences is far
      // larger than the caches, and without this each block waited on its loads.
      for (int64_t p = p0 + kBlock; p < std::min(n_pos, p0 + 2 * kBlock); ++p) {
        const size_t off = kv.offset(p) + head_offset;
        for (size_t b = 0; b < head_bytes; b += 64) {
          __builtin_prefetch(kv.k + off + b, 0, 3);
          __builtin_prefetch(kv.v + off + b, 0, 3);
        }
      }
      for (int64_t j = 0; j < nb; ++j) load_head(kv.k + kv.offset(p0 + j) + head_offset, f16, H, rows[j]);
      for (int64_t j = nb; j < kBlock; ++j) std::fill(rows[j], rows[j] + H, 0.0f);
      // Lanes past the end of the sequence score -inf: weight 0.
      const __m256 valid = _mm256_cmp_ps(
          _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_ps(static_cast<float>(nb)), _CMP_LT_OQ);
      // Scores of the 8 positions for each head of the group.
      for (int64_t g = 0; g < group; ++g) {
        const float* qh = q + (h0 + g) * H;
        __m256 acc[kBlock];
        for (int j = 0; j < kBlock; ++j) acc[j] = _mm256_setzero_ps();
        for (int64_t i = 0; i < H; i += 8) {
          const __m256 qv = _mm256_loadu_ps(qh + i);
          for (int j = 0; j < kBlock; ++j) acc[j] = _mm256_fmadd_ps(qv, _mm256_load_ps(rows[j] + i), acc[j]);
        }
        const __m256 s = _mm256_blendv_ps(neg_inf, _mm256_mul_ps(reduce8(acc), scale), valid);
        const float block_max = hmax(s);
        float* acc_out = out + (h0 + g) * H;
        if (block_max > max_score[g]) {  // new running max: rescale what was accumulated
          const __m256 r = _mm256_set1_ps(std::exp(max_score[g] - block_max));  // 0 at first
          sum[g] *= _mm256_cvtss_f32(r);
          for (int64_t i = 0; i < H; i += 8) {
            _mm256_storeu_ps(acc_out + i, _mm256_mul_ps(_mm256_loadu_ps(acc_out + i), r));
          }
          max_score[g] = block_max;
        }
        const __m256 w = exp_nonpositive(_mm256_sub_ps(s, _mm256_set1_ps(max_score[g])));
        sum[g] += hsum(w);
        _mm256_store_ps(block_weights[g], w);
      }
      // Weighted V: each V row converted once for all heads of the group.
      for (int64_t j = 0; j < nb; ++j) load_head(kv.v + kv.offset(p0 + j) + head_offset, f16, H, rows[j]);
      for (int64_t g = 0; g < group; ++g) {
        float* acc_out = out + (h0 + g) * H;
        for (int64_t i = 0; i < H; i += 8) {
          __m256 a = _mm256_loadu_ps(acc_out + i);
          for (int64_t j = 0; j < nb; ++j) {
            a = _mm256_fmadd_ps(_mm256_set1_ps(block_weights[g][j]), _mm256_load_ps(rows[j] + i), a);
          }
          _mm256_storeu_ps(acc_out + i, a);
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

void attention_rows(const float* q, size_t q_stride, const int64_t* n_pos, int64_t n_rows,
                    const KvRows& kv, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride) {
  attention_rows_by_row(avx2::attention_row, q, q_stride, n_pos, n_rows, kv, n_heads, n_kv_heads,
                        head_dim, kv_begin, kv_end, out, out_stride);
}

}  // namespace tessera::kernels::avx2
