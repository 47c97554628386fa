#include "tessera/kernels/iquants.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/quant_search.h"

namespace tessera::kernels {
namespace {

// Nearest-level lookup on a half-unit grid: level k is nearest to v exactly when 2v lies between
// the integer midpoints kIQ4Levels[k-1] + kIQ4Levels[k] and kIQ4Levels[k] + kIQ4Levels[k+1], so
// the index of floor(2v) in a 512-entry table answers for |v| < 128 (values beyond clamp to the
// end levels, which are then nearest anyway).
constexpr int kLutHalfRange = 256;
constexpr std::array<uint8_t, 2 * kLutHalfRange> make_nearest_lut() {
  std::array<uint8_t, 2 * kLutHalfRange> lut{};
  for (int u = 0; u < 2 * kLutHalfRange; ++u) {
    const int twice_v = u - kLutHalfRange;
    int k = 0;
    while (k < 15 && kIQ4Levels[k] + kIQ4Levels[k + 1] <= twice_v) ++k;
    lut[static_cast<size_t>(u)] = static_cast<uint8_t>(k);
  }
  return lut;
}
constexpr std::array<uint8_t, 2 * kLutHalfRange> kNearestLut = make_nearest_lut();

inline int nearest(float v) {
  float u = 2.0f * v + static_cast<float>(kLutHalfRange);
  if (!(u >= 0.0f)) u = 0.0f;  // also NaN
  if (u > 2.0f * kLutHalfRange - 1) u = 2.0f * kLutHalfRange - 1;
  return kNearestLut[static_cast<size_t>(u)];
}

constexpr float kMaxF16 = 65504.0f;
// Blocks whose largest |x| is below this code as zero: their step would be below f16's range.
constexpr float kMinAmax = 1e-30f;

inline float level(int k) { return static_cast<float>(kIQ4Levels[k]); }

// The 4-bit indices of a 32-value group in element order, from the IQ4_NL nibble layout.
void unpack_indices(const uint8_t* qs, uint8_t out[kQK4_NL]) {
  for (int j = 0; j < kQK4_NL / 2; ++j) {
    out[j] = qs[j] & 15;
    out[j + kQK4_NL / 2] = qs[j] >> 4;
  }
}
void pack_indices(const uint8_t idx[kQK4_NL], uint8_t* qs) {
  for (int j = 0; j < kQK4_NL / 2; ++j) {
    qs[j] = static_cast<uint8_t>(idx[j] | (idx[j + kQK4_NL / 2] << 4));
  }
}

// Sub-block j's 6-bit scale (0..63) of an IQ4_XS super-block.
int xs_scale(const BlockIQ4_XS& b, int j) {
  const int lo = (b.scales_l[j / 2] >> (4 * (j % 2))) & 15;
  const int hi = (b.scales_h >> (2 * j)) & 3;
  return lo | (hi << 4);
}

// ---- Quantizer ----------------------------------------------------------------------------------

// Indices for step s (nearest level to each x / s) and the squared error of the decoded values
// s * level, computed as the decoder computes them (weighted by w; null: unweighted). s == 0
// codes everything as zero.
float assign_and_error(const float* x, float s, uint8_t idx[kQK4_NL], const float* w) {
  float err = 0.0f;
  if (s == 0.0f) {
    for (int i = 0; i < kQK4_NL; ++i) {
      idx[i] = 8;  // the level nearest zero; its value is irrelevant under a zero step
      err += weight_at(w, i) * x[i] * x[i];
    }
    return err;
  }
  const float inv = 1.0f / s;
  for (int i = 0; i < kQK4_NL; ++i) {
    idx[i] = static_cast<uint8_t>(nearest(x[i] * inv));
    const float e = s * level(idx[i]) - x[i];
    err += weight_at(w, i) * e * e;
  }
  return err;
}

// Least-squares step for fixed indices. The table has no zero level, so the divisor is > 0.
// Weighted by w when it is not null; 0 when every weight is 0.
float refit(const float* x, const uint8_t idx[kQK4_NL], const float* w) {
  double sqx = 0, sqq = 0;
  for (int i = 0; i < kQK4_NL; ++i) {
    const double wi = weight_at(w, i);
    sqx += wi * level(idx[i]) * x[i];
    sqq += wi * level(idx[i]) * level(idx[i]);
  }
  return sqq > 0 ? static_cast<float>(sqx / sqq) : 0.0f;
}

float clamp_step(float s) { return std::fmax(-kMaxF16, std::fmin(kMaxF16, s)); }

// The best unrounded step of a 32-value group (see iq4_nl_from_float's contract). 0 for a group
// of (near) zeros.
float search_step(const float* x, const float* w) {
  float amax = 0.0f, max = 0.0f;
  bool finite = true;
  for (int i = 0; i < kQK4_NL; ++i) {
    finite = finite && std::isfinite(x[i]);
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (!finite || !(amax >= kMinAmax)) return 0.0f;  // NaN/Inf: code the block as zeros
  constexpr int kTries = 24;
  float best_step = 0.0f;
  double best_score = -1.0;  // sum(q x)^2 / sum(q^2): the error removed by the LS step
  for (const float end : {level(0), level(15)}) {
    for (int k = 0; k < kTries; ++k) {
      const float target = end * (0.70f + 0.02f * static_cast<float>(k));
      const float inv = target / max;
      double sqx = 0, sqq = 0;
      for (int i = 0; i < kQK4_NL; ++i) {
        const float q = level(nearest(x[i] * inv));
        const double wi = weight_at(w, i);
        sqx += wi * q * x[i];
        sqq += wi * q * q;
      }
      if (!(sqq > 0)) continue;  // every weight 0
      const double score = sqx * sqx / sqq;
      if (score > best_score) {
        best_score = score;
        best_step = static_cast<float>(sqx / sqq);
      }
    }
  }
  return clamp_step(best_step);
}

// Codes one IQ4_NL block from its searched step: tries the f16 step and its neighbours, then
// refits twice; keeps whichever decodes with least error.
void quantize_nl_block(const float* x, BlockIQ4_NL* out, const float* w) {
  const float s = search_step(x, w);
  uint16_t best_h = f32_to_f16(s);
  uint8_t best_idx[kQK4_NL], idx[kQK4_NL];
  float best_err = assign_and_error(x, f16_to_f32(best_h), best_idx, w);
  if (s != 0.0f) {
    const uint16_t center = best_h;
    for (const int delta : {-1, 1}) {
      const uint16_t h = static_cast<uint16_t>(center + delta);  // the adjacent f16 magnitudes
      const float v = f16_to_f32(h);
      if (!std::isfinite(v) || (v > 0.0f) != (s > 0.0f)) continue;
      const float err = assign_and_error(x, v, idx, w);
      if (err < best_err) {
        best_err = err;
        best_h = h;
        std::memcpy(best_idx, idx, sizeof(idx));
      }
    }
    for (int round = 0; round < 2; ++round) {
      const uint16_t h = f32_to_f16(clamp_step(refit(x, best_idx, w)));
      if (h == best_h) break;
      const float err = assign_and_error(x, f16_to_f32(h), idx, w);
      if (!(err < best_err)) break;
      best_err = err;
      best_h = h;
      std::memcpy(best_idx, idx, sizeof(idx));
    }
  }
  out->d = best_h;
  pack_indices(best_idx, out->qs);
}

void quantize_xs_superblock(const float* x, BlockIQ4_XS* out, const float* w) {
  constexpr int kSubs = kQK_K / kQK4_NL;
  const auto sub_w = [&](int j) { return w != nullptr ? w + kQK4_NL * j : nullptr; };
  float steps[kSubs];
  float smax = 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    steps[j] = search_step(x + kQK4_NL * j, sub_w(j));
    if (std::fabs(steps[j]) > std::fabs(smax)) smax = steps[j];
  }
  std::memset(out, 0, sizeof(*out));
  uint8_t levels[kSubs];
  uint8_t idx[kQK_K];
  if (smax == 0.0f) {  // all sub-blocks (near) zero: d = 0 decodes as zeros
    for (int j = 0; j < kSubs; ++j) levels[j] = 32;
    std::memset(idx, 0, sizeof(idx));
  } else {
    float best_total = INFINITY;
    for (const float d_try : {smax / -32.0f, smax / 31.0f}) {
      const uint16_t h = f32_to_f16(clamp_step(d_try));
      const float d = f16_to_f32(h);
      if (d == 0.0f) continue;
      float total = 0.0f;
      uint8_t try_levels[kSubs], try_idx[kQK_K];
      for (int j = 0; j < kSubs; ++j) {
        const float* xj = x + kQK4_NL * j;
        // Clamped first: with d in f16's subnormal range, its rounding can push the ratio of the
        // largest step past -32 or 31.
        const int l0 = std::clamp(static_cast<int>(std::lround(steps[j] / d)), -32, 31);
        float best = INFINITY;
        for (int l = l0 - 1; l <= l0 + 1; ++l) {
          if (l < -32 || l > 31) continue;
          uint8_t sub_idx[kQK4_NL];
          const float err = assign_and_error(xj, d * static_cast<float>(l), sub_idx, sub_w(j));
          if (err < best) {
            best = err;
            try_levels[j] = static_cast<uint8_t>(l + 32);
            std::memcpy(try_idx + kQK4_NL * j, sub_idx, sizeof(sub_idx));
          }
        }
        total += best;
      }
      if (total < best_total) {
        best_total = total;
        out->d = h;
        std::memcpy(levels, try_levels, sizeof(levels));
        std::memcpy(idx, try_idx, sizeof(idx));
      }
    }
    if (!(best_total < INFINITY)) {  // d rounded to zero in f16, or a NaN/Inf input: zeros
      out->d = 0;
      for (int j = 0; j < kSubs; ++j) levels[j] = 32;
      std::memset(idx, 0, sizeof(idx));
    }
  }
  for (int j = 0; j < kSubs; ++j) {
    out->scales_l[j / 2] |= static_cast<uint8_t>((levels[j] & 15) << (4 * (j % 2)));
    out->scales_h |= static_cast<uint16_t>((levels[j] >> 4) << (2 * j));
    pack_indices(idx + kQK4_NL * j, out->qs + kQK4_NL / 2 * j);
  }
}

}  // namespace

int iq4_nearest_level(float v) { return nearest(v); }

namespace scalar {

void iq4_nl_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK4_NL == 0);
  const auto* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQK4_NL; ++i) {
    const float d = f16_to_f32(b[i].d);
    uint8_t idx[kQK4_NL];
    unpack_indices(b[i].qs, idx);
    for (int e = 0; e < kQK4_NL; ++e) dst[i * kQK4_NL + e] = d * level(idx[e]);
  }
}

void iq4_nl_from_float(const float* src, void* dst, int64_t n) {
  TS_CHECK(n % kQK4_NL == 0);
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t i = 0; i < n / kQK4_NL; ++i) quantize_nl_block(src + i * kQK4_NL, &b[i], nullptr);
}

void iq4_nl_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK4_NL == 0);
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t i = 0; i < n / kQK4_NL; ++i) {
    quantize_nl_block(src + i * kQK4_NL, &b[i], w != nullptr ? w + i * kQK4_NL : nullptr);
  }
}

float iq4_nl_dot(const void* row, const float* x, int64_t n) {
  TS_CHECK(n % kQK4_NL == 0);
  const auto* b = static_cast<const BlockIQ4_NL*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_NL; ++i) {
    uint8_t idx[kQK4_NL];
    unpack_indices(b[i].qs, idx);
    const float* xb = x + i * kQK4_NL;
    float block = 0.0f;
    for (int e = 0; e < kQK4_NL; ++e) block += level(idx[e]) * xb[e];
    sum += f16_to_f32(b[i].d) * block;
  }
  return sum;
}

void iq4_xs_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK_K / kQK4_NL; ++j) {
      const float dl = d * static_cast<float>(xs_scale(b[i], j) - 32);
      uint8_t idx[kQK4_NL];
      unpack_indices(b[i].qs + kQK4_NL / 2 * j, idx);
      float* y = dst + i * kQK_K + kQK4_NL * j;
      for (int e = 0; e < kQK4_NL; ++e) y[e] = dl * level(idx[e]);
    }
  }
}

void iq4_xs_from_float(const float* src, void* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_xs_superblock(src + i * kQK_K, &b[i], nullptr);
}

void iq4_xs_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    quantize_xs_superblock(src + i * kQK_K, &b[i], w != nullptr ? w + i * kQK_K : nullptr);
  }
}

float iq4_xs_dot(const void* row, const float* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockIQ4_XS*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK_K / kQK4_NL; ++j) {
      uint8_t idx[kQK4_NL];
      unpack_indices(b[i].qs + kQK4_NL / 2 * j, idx);
      const float* xb = x + i * kQK_K + kQK4_NL * j;
      float sub = 0.0f;
      for (int e = 0; e < kQK4_NL; ++e) sub += level(idx[e]) * xb[e];
      sum += d * static_cast<float>(xs_scale(b[i], j) - 32) * sub;
    }
  }
  return sum;
}

float iq4_nl_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK4_NL == 0);
  const auto* w = static_cast<const BlockIQ4_NL*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_NL; ++i) {
    int32_t acc = 0;
    for (int j = 0; j < kQK4_NL / 2; ++j) {
      acc += kIQ4Levels[w[i].qs[j] & 15] * a[i].qs[j];
      acc += kIQ4Levels[w[i].qs[j] >> 4] * a[i].qs[j + kQK4_NL / 2];
    }
    sum += f16_to_f32(w[i].d) * f16_to_f32(a[i].d) * static_cast<float>(acc);
  }
  return sum;
}

float iq4_xs_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockIQ4_XS*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int32_t isum = 0;  // |isum| <= 8 * 32 * 32 * 127 * 127 < 2^31
    for (int j = 0; j < kQK_K / kQK4_NL; ++j) {
      const uint8_t* qs = w[i].qs + kQK4_NL / 2 * j;
      const int8_t* q8 = a[i].qs + kQK4_NL * j;
      int32_t sub = 0;
      for (int k = 0; k < kQK4_NL / 2; ++k) {
        sub += kIQ4Levels[qs[k] & 15] * q8[k];
        sub += kIQ4Levels[qs[k] >> 4] * q8[k + kQK4_NL / 2];
      }
      isum += (xs_scale(w[i], j) - 32) * sub;
    }
    const float d = a[i].d * f16_to_f32(w[i].d);
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

}  // namespace scalar

void install_scalar_iquant_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kIQ4_NL)] = {
      scalar::iq4_nl_to_float, scalar::iq4_nl_from_float, scalar::iq4_nl_dot, DType::kQ8_0,
      scalar::iq4_nl_q8_0_vec_dot};
  t.dtypes[dtype_slot(DType::kIQ4_XS)] = {
      scalar::iq4_xs_to_float, scalar::iq4_xs_from_float, scalar::iq4_xs_dot, DType::kQ8_K,
      scalar::iq4_xs_q8_k_vec_dot};
}

void install_avx2_iquant_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kIQ4_NL)].vec_dot = avx2::iq4_nl_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kIQ4_XS)].vec_dot = avx2::iq4_xs_q8_k_vec_dot;
  t.dtypes[dtype_slot(DType::kIQ4_NL)].vec_dot_tile = avx2::iq4_nl_q8_0_vec_dot_tile;
  t.dtypes[dtype_slot(DType::kIQ4_XS)].vec_dot_tile = avx2::iq4_xs_q8_k_vec_dot_tile;
}

void install_avx512_iquant_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kIQ4_NL)].vec_dot = avx512::iq4_nl_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kIQ4_XS)].vec_dot = avx512::iq4_xs_q8_k_vec_dot;
  t.dtypes[dtype_slot(DType::kIQ4_NL)].vec_dot_tile = avx512::iq4_nl_q8_0_vec_dot_tile;
  t.dtypes[dtype_slot(DType::kIQ4_XS)].vec_dot_tile = avx512::iq4_xs_q8_k_vec_dot_tile;
}

}  // namespace tessera::kernels
