// AVX-512 attention over several query rows of one sequence (see attention.h for the contract).
// Lanes are query vectors: the (row, head) pairs of one KV head, 16 per register. Per block of
// 16 positions the K rows are converted to f32 once, and score register j (position p0 + j)
// accumulates q_lane[i] * k_j[i] over i with the transposed queries loaded once per i and k_j[i]
// broadcast from memory: 16 FMAs per element of the head, no horizontal sums. The online softmax
// is then lane-wise over the 16 score registers, and V is accumulated the same way into a
// transposed output (one register per element of the head, 16 FMAs each per block).
//
// Work per block of 16 lanes x 16 positions with head size H: 2 x 16 x H FMAs (zmm), 17 exps,
// 2 x 16 rows converted; per lane and position 4H FLOPs, as the reference.

// GCC 12 warns that the _mm512_undefined_* placeholders inside many AVX-512 intrinsics are
// used uninitialized: a false positive about the header's own code (as in avx512_kernels.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "tessera/base/check.h"
#include "tessera/kernels/attention.h"

namespace tessera::kernels::avx512 {
namespace {

constexpr int64_t kMaxHeadDim = 256;
constexpr int kLanes = 16;   // query vectors per register
constexpr int kBlock = 16;   // positions per block: one score register each

// e^x for x <= 0 (relative to a running max), 0 below -87 and for -inf: x = n ln2 + r with
// |r| <= ln2 / 2, e^r by a degree-6 polynomial, 2^n through the exponent bits (as avx2_exp.h).
inline __m512 exp_nonpositive(__m512 x) {
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_GE_OQ);
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(live, p, _mm512_castsi512_ps(e));
}

// Row p's head (H values at byte offset `head_offset`) as floats in dst; H % 16 == 0.
inline void load_head(const KvRows& kv, const std::byte* base, int64_t p, size_t head_offset,
                      int64_t H, float* dst) {
  const std::byte* src = base + kv.offset(p) + head_offset;
  if (kv.dtype == DType::kF16) {
    for (int64_t i = 0; i < H; i += 16) {
      _mm512_store_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                   reinterpret_cast<const __m256i*>(src + i * 2))));
    }
  } else {
    std::memcpy(dst, src, static_cast<size_t>(H) * sizeof(float));
  }
}

// One KV head, lanes [0, n_lanes) of the (row, head) pairs starting at pair `first`.
struct LaneSet {
  const float* q;
  size_t q_stride;
  const int64_t* n_pos;
  float* out;
  size_t out_stride;
  int64_t group, h0, first, n_lanes;
};

void attend_lanes(const LaneSet& ls, const KvRows& kv, int64_t H) {
  alignas(64) float qt[kMaxHeadDim][kLanes];  // queries, transposed and pre-scaled
  alignas(64) float ot[kMaxHeadDim][kLanes];  // the output, transposed
  alignas(64) float kf[kBlock][kMaxHeadDim];
  alignas(64) float vf[kBlock][kMaxHeadDim];
  alignas(64) int32_t npos_lanes[kLanes];
  const float scale = 1.0f / std::sqrt(static_cast<float>(H));
  int64_t max_pos = 0;
  for (int l = 0; l < kLanes; ++l) {
    // Lanes past n_lanes repeat the first lane (finite scores, results dropped).
    const int64_t pair = ls.first + (l < ls.n_lanes ? l : 0);
    const int64_t r = pair / ls.group;
    const float* qh = ls.q + r * ls.q_stride + (ls.h0 + pair % ls.group) * H;
    for (int64_t i = 0; i < H; ++i) qt[i][l] = qh[i] * scale;
    npos_lanes[l] = static_cast<int32_t>(ls.n_pos[r]);
    max_pos = std::max(max_pos, ls.n_pos[r]);
  }
  for (int64_t i = 0; i < H; ++i) _mm512_store_ps(ot[i], _mm512_setzero_ps());
  const __m512i npos = _mm512_load_si512(npos_lanes);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 run_max = neg_inf;
  __m512 run_sum = _mm512_setzero_ps();
  const size_t head_offset = static_cast<size_t>(ls.h0 / ls.group * H) *
                             (kv.dtype == DType::kF16 ? 2 : 4);
  for (int64_t p0 = 0; p0 < max_pos; p0 += kBlock) {
    const int64_t nb = std::min<int64_t>(kBlock, max_pos - p0);
    for (int64_t j = 0; j < nb; ++j) load_head(kv, kv.k, p0 + j, head_offset, H, kf[j]);
    for (int64_t j = nb; j < kBlock; ++j) std::fill(kf[j], kf[j] + H, 0.0f);
    __m512 s[kBlock];
#pragma GCC unroll 16
    for (int j = 0; j < kBlock; ++j) s[j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < H; ++i) {
      const __m512 qv = _mm512_load_ps(qt[i]);
#pragma GCC unroll 16
      for (int j = 0; j < kBlock; ++j) s[j] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kf[j][i]), s[j]);
    }
    // Position p0 + j is visible to a lane when p0 + j < its n_pos; others score -inf.
    __m512 block_max = neg_inf;
#pragma GCC unroll 16
    for (int j = 0; j < kBlock; ++j) {
      const __mmask16 visible = _mm512_cmpgt_epi32_mask(npos, _mm512_set1_epi32(static_cast<int32_t>(p0 + j)));
      s[j] = _mm512_mask_mov_ps(neg_inf, visible, s[j]);
      block_max = _mm512_max_ps(block_max, s[j]);
    }
    // Every lane sees position 0, so the running max is finite from the first block on.
    const __m512 new_max = _mm512_max_ps(run_max, block_max);
    const __m512 alpha = exp_nonpositive(_mm512_sub_ps(run_max, new_max));  // 0 at first
    run_max = new_max;
    __m512 block_sum = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int j = 0; j < kBlock; ++j) {
      s[j] = exp_nonpositive(_mm512_sub_ps(s[j], new_max));
      block_sum = _mm512_add_ps(block_sum, s[j]);
    }
    run_sum = _mm512_fmadd_ps(run_sum, alpha, block_sum);
    for (int64_t j = 0; j < nb; ++j) load_head(kv, kv.v, p0 + j, head_offset, H, vf[j]);
    for (int64_t j = nb; j < kBlock; ++j) std::fill(vf[j], vf[j] + H, 0.0f);
    for (int64_t i = 0; i < H; ++i) {
      __m512 a = _mm512_mul_ps(_mm512_load_ps(ot[i]), alpha);
#pragma GCC unroll 16
      for (int j = 0; j < kBlock; ++j) a = _mm512_fmadd_ps(s[j], _mm512_set1_ps(vf[j][i]), a);
      _mm512_store_ps(ot[i], a);
    }
  }
  alignas(64) float inv[kLanes];
  _mm512_store_ps(inv, _mm512_div_ps(_mm512_set1_ps(1.0f), run_sum));
  for (int64_t l = 0; l < ls.n_lanes; ++l) {
    const int64_t pair = ls.first + l;
    float* dst = ls.out + (pair / ls.group) * ls.out_stride + (ls.h0 + pair % ls.group) * H;
    for (int64_t i = 0; i < H; ++i) dst[i] = ot[i][l] * inv[l];
  }
}

}  // namespace

void attention_rows(const float* q, size_t q_stride, const int64_t* n_pos, int64_t n_rows,
                    const KvRows& kv, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                    int64_t kv_begin, int64_t kv_end, float* out, size_t out_stride) {
  const int64_t H = head_dim;
  const int64_t group = n_heads / n_kv_heads;
  if (H % 16 != 0) {
    avx2::attention_rows(q, q_stride, n_pos, n_rows, kv, n_heads, n_kv_heads, head_dim, kv_begin,
                         kv_end, out, out_stride);
    return;
  }
  TS_CHECK(H <= kMaxHeadDim && n_rows >= 1);
  for (int64_t r = 0; r < n_rows; ++r) TS_CHECK(n_pos[r] >= 1);
  const int64_t n_pairs = n_rows * group;  // (row, head) pairs of one KV head: pair = r * group + g
  for (int64_t kvh = kv_begin; kvh < kv_end; ++kvh) {
    for (int64_t first = 0; first < n_pairs; first += kLanes) {
      const LaneSet ls{q,     q_stride, n_pos,  out, out_stride, group, kvh * group, first,
                       std::min<int64_t>(kLanes, n_pairs - first)};
      attend_lanes(ls, kv, H);
    }
  }
}

}  // namespace tessera::kernels::avx512
