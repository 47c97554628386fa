#include "tessera/kernels/kquants_low.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/quant_search.h"

namespace tessera::kernels {

void unpack_q3_k_scales(const uint8_t packed[kQ3KScaleBytes], int8_t scales[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low = (packed[j % 8] >> (4 * (j / 8))) & 15;
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = static_cast<int8_t>((low | high << 4) - 32);
  }
}

void pack_q3_k_scales(const int8_t scales[16], uint8_t packed[kQ3KScaleBytes]) {
  std::memset(packed, 0, kQ3KScaleBytes);
  for (int j = 0; j < 16; ++j) {
    const int code = scales[j] + 32;
    packed[j % 8] |= static_cast<uint8_t>((code & 15) << (4 * (j / 8)));
    packed[8 + j % 4] |= static_cast<uint8_t>((code >> 4) << (2 * (j / 4)));
  }
}

namespace scalar {
namespace {

constexpr int kSub = 16;             // values per sub-block in both formats
constexpr int kSubs = kQK_K / kSub;  // sub-blocks per super-block

// f16 of v, saturated to the largest finite f16 (65504) so out-of-range data clips, not overflows.
uint16_t saturating_f16(float v) {
  constexpr float kMaxF16 = 65504.0f;
  return f32_to_f16(std::clamp(v, -kMaxF16, kMaxF16));
}

// The two low bits of every element, in element order (layout in kquant_low_blocks.h).
void low_bits(const uint8_t* qs, uint8_t out[kQK_K]) {
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 32; ++l) out[128 * h + 32 * k + l] = (qs[32 * h + l] >> (2 * k)) & 3;
    }
  }
}

void pack_low_bits(const int levels[kQK_K], uint8_t* qs) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      int byte = 0;
      for (int k = 0; k < 4; ++k) byte |= (levels[128 * h + 32 * k + l] & 3) << (2 * k);
      qs[32 * h + l] = static_cast<uint8_t>(byte);
    }
  }
}

// Q3_K levels in -4..3, element order.
void q3_k_levels(const BlockQ3_K& b, int8_t out[kQK_K]) {
  uint8_t low[kQK_K];
  low_bits(b.qs, low);
  for (int t = 0; t < 8; ++t) {  // hmask bit t holds the high bits of elements 32t .. 32t+31
    for (int l = 0; l < 32; ++l) {
      const int high = (b.hmask[l] >> t) & 1;
      out[32 * t + l] = static_cast<int8_t>(low[32 * t + l] + 4 * high - 4);
    }
  }
}

// sum of levels[e] * act[e] over one sub-block.
template <typename L>
int32_t level_dot(const L* levels, const int8_t* act) {
  int32_t dot = 0;
  for (int e = 0; e < kSub; ++e) dot += levels[e] * act[e];
  return dot;
}

// The f32-activation dot: each block dequantized to a stack buffer, then a plain dot.
float dot_by_dequant(const void* row, size_t block_bytes, const float* x, int64_t n,
                     void (*to_float)(const void*, float*, int64_t)) {
  TS_CHECK(n % kQK_K == 0);
  const auto* blocks = static_cast<const std::byte*>(row);
  float sum = 0.0f;
  float tmp[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    to_float(blocks + i * static_cast<int64_t>(block_bytes), tmp, kQK_K);
    const float* xb = x + i * kQK_K;
    float block = 0.0f;
    for (int e = 0; e < kQK_K; ++e) block += tmp[e] * xb[e];
    sum += block;
  }
  return sum;
}

// ---- Q3_K quantizer: a signed step x ~ step*q, q in -4..3, per sub-block. ---------------------

constexpr int kQ3Lo = -4, kQ3Hi = 3;

// Squared error of x[0..kSub) on the grid step*q, each value at its nearest level; levels out
// when `levels` is not null.
// Weighted by w (null: unweighted).
float sym_error(const float* x, float step, int* levels, const float* w) {
  const float inv = step != 0.0f ? 1.0f / step : 0.0f;
  float err = 0.0f;
  for (int i = 0; i < kSub; ++i) {
    const int q = round_clamp(x[i] * inv, kQ3Lo, kQ3Hi);
    if (levels != nullptr) levels[i] = q;
    const float e = step * static_cast<float>(q) - x[i];
    err += weight_at(w, i) * e * e;
  }
  return err;
}

float search_sym(const float* x, const float* w) {
  float amax = 0.0f, vmax = 0.0f;
  double sxx = 0;
  for (int i = 0; i < kSub; ++i) {
    sxx += static_cast<double>(weight_at(w, i)) * x[i] * x[i];
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best = vmax / -4.0f;
  double best_fit = INFINITY;
  int levels[kSub];
  auto consider = [&](float inv) {
    for (int i = 0; i < kSub; ++i) levels[i] = round_clamp(x[i] * inv, kQ3Lo, kQ3Hi);
    double fit = 0;
    const float step = fit_symmetric(x, levels, kSub, sxx, &fit, w);
    if (fit < best_fit) {
      best_fit = fit;
      best = step;
    }
  };
  for (int k = 0; k <= 20; ++k) consider(-(2.5f + 0.1f * static_cast<float>(k)) / vmax);
  for (int k = 0; k <= 15; ++k) consider((2.0f + 0.1f * static_cast<float>(k)) / vmax);
  float best_err = sym_error(x, best, nullptr, w);
  for (int round = 0; round < 3; ++round) {
    sym_error(x, best, levels, w);
    double fit = 0;
    const float step = fit_symmetric(x, levels, kSub, sxx, &fit, w);
    const float err = sym_error(x, step, nullptr, w);
    if (!(err < best_err)) break;
    best_err = err;
    best = step;
  }
  return best;
}

// Chooses each sub-block's scale code for super-block scale d (the code in floor-1 .. ceil+1 of
// its ideal step / d with the least error) and the levels for it; returns the total error.
float q3_code_steps(const float* x, const float steps[kSubs], float d, int8_t codes[kSubs],
                    int levels[kQK_K], const float* w) {
  float total = 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    const float* xj = x + kSub * j;
    const float* wj = w != nullptr ? w + kSub * j : nullptr;
    const float r = steps[j] / d;
    const int lo = round_clamp(std::floor(r) - 1.0f, -32, 31);
    const int hi = round_clamp(std::ceil(r) + 1.0f, -32, 31);
    float best_err = INFINITY;
    int best = lo;
    for (int c = lo; c <= hi; ++c) {
      const float err = sym_error(xj, d * static_cast<float>(c), nullptr, wj);
      if (err < best_err) {
        best_err = err;
        best = c;
      }
    }
    codes[j] = static_cast<int8_t>(best);
    total += sym_error(xj, d * static_cast<float>(best), levels + kSub * j, wj);
  }
  return total;
}

// ---- Q2_K quantizer: an affine grid x ~ step*q - offset, q in 0..3, per sub-block. -----------

constexpr int kQ2Max = 3;

// Weighted by w (null: unweighted).
float affine_error(const float* x, float step, float offset, int* levels, const float* w) {
  const float inv = step > 0.0f ? 1.0f / step : 0.0f;
  float err = 0.0f;
  for (int i = 0; i < kSub; ++i) {
    const int q = step > 0.0f ? round_clamp((x[i] + offset) * inv, 0, kQ2Max) : 0;
    if (levels != nullptr) levels[i] = q;
    const float e = step * static_cast<float>(q) - offset - x[i];
    err += weight_at(w, i) * e * e;
  }
  return err;
}

struct Affine {
  float step = 0.0f;
  float offset = 0.0f;  // >= 0: the format stores an unsigned min
};

// Least-squares (step, offset >= 0) for fixed levels and that fit's squared error; false when
// the levels are all equal or the fit is degenerate.
// With weights w (not null) the weighted least squares; sx, sxx are then sums of w x, w x^2.
bool fit_affine(const float* x, const int* levels, double sx, double sxx, Affine* out,
                double* err, const float* w) {
  // Unweighted, the sums are exact integers and kSub stands for sum w.
  double sw = kSub, sl = 0, sll = 0;
  double sxl = 0;
  if (w != nullptr) sw = 0;
  for (int i = 0; i < kSub; ++i) {
    const double wi = weight_at(w, i);
    if (w != nullptr) sw += wi;
    sl += wi * levels[i];
    sll += wi * levels[i] * levels[i];
    sxl += wi * x[i] * levels[i];
  }
  const double det = sw * sll - sl * sl;
  if (!(det > 0)) return false;
  double step = (sw * sxl - sx * static_cast<double>(sl)) / static_cast<double>(det);
  double base = (static_cast<double>(sll) * sx - static_cast<double>(sl) * sxl) /
                static_cast<double>(det);  // the value of level 0, = -offset
  if (base > 0) {  // not codable (offset >= 0): refit through the origin
    base = 0;
    step = sxl / static_cast<double>(sll);
  }
  if (step < 0) return false;
  *err = sxx - step * sxl - base * sx;  // the residual is orthogonal to the fitted terms
  out->step = static_cast<float>(step);
  out->offset = static_cast<float>(-base);
  return true;
}

Affine search_affine(const float* x, const float* w) {
  float lo = 0.0f, hi = x[0];
  double sx = 0, sxx = 0;
  for (int i = 0; i < kSub; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sx += static_cast<double>(weight_at(w, i)) * x[i];
    sxx += static_cast<double>(weight_at(w, i)) * x[i] * x[i];
  }
  if (!(hi > lo)) return {0.0f, -lo};  // constant non-positive sub-block: the offset codes it
  Affine best{(hi - lo) / static_cast<float>(kQ2Max), -lo};  // the min-max grid
  double best_fit = INFINITY;
  int levels[kSub];
  for (int k = 0; k <= 24; ++k) {
    const float inv = (2.0f + 0.1f * static_cast<float>(k)) / (hi - lo);
    for (int i = 0; i < kSub; ++i) levels[i] = round_clamp((x[i] - lo) * inv, 0, kQ2Max);
    Affine a;
    double fit = 0;
    if (fit_affine(x, levels, sx, sxx, &a, &fit, w) && fit < best_fit) {
      best_fit = fit;
      best = a;
    }
  }
  float best_err = affine_error(x, best.step, best.offset, nullptr, w);
  for (int round = 0; round < 3; ++round) {
    affine_error(x, best.step, best.offset, levels, w);
    Affine a;
    double fit = 0;
    if (!fit_affine(x, levels, sx, sxx, &a, &fit, w)) break;
    const float err = affine_error(x, a.step, a.offset, nullptr, w);
    if (!(err < best_err)) break;
    best_err = err;
    best = a;
  }
  return best;
}

// Candidate 4-bit codes around ratio r: floor-1 .. ceil+1, clamped to 0..15.
void code_range(float r, int* lo, int* hi) {
  *lo = round_clamp(std::floor(r) - 1.0f, 0, 15);
  *hi = round_clamp(std::ceil(r) + 1.0f, 0, 15);
}

// Chooses each sub-block's (scale, min) codes for (d, dmin) and the levels; returns the error.
float q2_code(const float* x, const Affine sub[kSubs], float d, float dmin, uint8_t sc[kSubs],
              uint8_t m[kSubs], int levels[kQK_K], const float* w) {
  float total = 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    const float* xj = x + kSub * j;
    const float* wj = w != nullptr ? w + kSub * j : nullptr;
    int s_lo, s_hi, m_lo, m_hi;
    code_range(d > 0.0f ? sub[j].step / d : 0.0f, &s_lo, &s_hi);
    code_range(dmin > 0.0f ? sub[j].offset / dmin : 0.0f, &m_lo, &m_hi);
    float best_err = INFINITY;
    sc[j] = static_cast<uint8_t>(s_lo);
    m[j] = static_cast<uint8_t>(m_lo);
    for (int s = s_lo; s <= s_hi; ++s) {
      for (int mm = m_lo; mm <= m_hi; ++mm) {
        const float err = affine_error(xj, d * static_cast<float>(s),
                                       dmin * static_cast<float>(mm), nullptr, wj);
        if (err < best_err) {
          best_err = err;
          sc[j] = static_cast<uint8_t>(s);
          m[j] = static_cast<uint8_t>(mm);
        }
      }
    }
    total += affine_error(xj, d * static_cast<float>(sc[j]), dmin * static_cast<float>(m[j]),
                          levels + kSub * j, wj);
  }
  return total;
}

void encode_q2_k(const float* x, BlockQ2_K* b, const float* w) {
  Affine sub[kSubs];
  float max_step = 0.0f, max_offset = 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    sub[j] = search_affine(x + kSub * j, w != nullptr ? w + kSub * j : nullptr);
    max_step = std::max(max_step, sub[j].step);
    max_offset = std::max(max_offset, sub[j].offset);
  }
  uint16_t dh = saturating_f16(max_step / 15.0f);
  uint16_t mh = saturating_f16(max_offset / 15.0f);
  uint8_t sc[kSubs], m[kSubs];
  int levels[kQK_K];
  float err = q2_code(x, sub, f16_to_f32(dh), f16_to_f32(mh), sc, m, levels, w);
  // Joint least-squares refit of (d, dmin) for the chosen codes and levels:
  // x[e] ~ d * (sc[j] * q[e]) - dmin * m[j].
  for (int round = 0; round < 2; ++round) {
    double aa = 0, ab = 0, bb = 0, xa = 0, xb = 0;
    for (int e = 0; e < kQK_K; ++e) {
      const double a = static_cast<double>(sc[e / kSub]) * levels[e];
      const double bm = -static_cast<double>(m[e / kSub]);
      const double we = weight_at(w, e);
      aa += we * a * a;
      ab += we * a * bm;
      bb += we * bm * bm;
      xa += we * x[e] * a;
      xb += we * x[e] * bm;
    }
    const double det = aa * bb - ab * ab;
    if (!(det > 0)) break;
    const double nd = (xa * bb - xb * ab) / det;
    const double ndmin = (aa * xb - ab * xa) / det;
    if (!(nd > 0 && ndmin >= 0)) break;
    const uint16_t dh2 = saturating_f16(static_cast<float>(nd));
    const uint16_t mh2 = saturating_f16(static_cast<float>(ndmin));
    const float d2 = f16_to_f32(dh2), dmin2 = f16_to_f32(mh2);
    uint8_t sc2[kSubs], m2[kSubs];
    int levels2[kQK_K];
    // The ideal per-sub-block grids stay the targets; codes are re-chosen for the new scales.
    const float err2 = q2_code(x, sub, d2, dmin2, sc2, m2, levels2, w);
    if (!(err2 < err)) break;
    err = err2;
    dh = dh2;
    mh = mh2;
    std::memcpy(sc, sc2, sizeof(sc));
    std::memcpy(m, m2, sizeof(m));
    std::memcpy(levels, levels2, sizeof(levels));
  }
  for (int j = 0; j < kSubs; ++j) b->scales[j] = static_cast<uint8_t>(sc[j] | m[j] << 4);
  pack_low_bits(levels, b->qs);
  b->d = dh;
  b->dmin = mh;
}

void encode_q3_k(const float* x, BlockQ3_K* b, const float* w) {
  float steps[kSubs];
  float big = 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    steps[j] = search_sym(x + kSub * j, w != nullptr ? w + kSub * j : nullptr);
    if (std::fabs(steps[j]) > std::fabs(big)) big = steps[j];
  }
  // The step of largest magnitude codes as -32, the end of the 6-bit range with one value more.
  uint16_t dh = saturating_f16(big / -32.0f);
  float d = f16_to_f32(dh);
  int8_t codes[kSubs];
  int levels[kQK_K];
  if (d == 0.0f || !std::isfinite(d)) {  // all zero, below f16's range, or unrepresentable
    std::memset(b, 0, sizeof(BlockQ3_K));
    std::memset(b->hmask, 0xff, sizeof(b->hmask));  // level 0 everywhere: decodes to +0
    int8_t zero[kSubs] = {};
    pack_q3_k_scales(zero, b->scales);
    return;
  }
  float err = q3_code_steps(x, steps, d, codes, levels, w);
  // Least-squares refit of d for the chosen codes and levels: x[e] ~ d * (codes[j] * q[e]).
  for (int round = 0; round < 2; ++round) {
    double aa = 0, xa = 0;
    for (int e = 0; e < kQK_K; ++e) {
      const double a = static_cast<double>(codes[e / kSub]) * levels[e];
      const double we = weight_at(w, e);
      aa += we * a * a;
      xa += we * x[e] * a;
    }
    if (!(aa > 0)) break;
    const uint16_t dh2 = saturating_f16(static_cast<float>(xa / aa));
    const float d2 = f16_to_f32(dh2);
    if (d2 == 0.0f || !std::isfinite(d2)) break;
    int8_t codes2[kSubs];
    int levels2[kQK_K];
    const float err2 = q3_code_steps(x, steps, d2, codes2, levels2, w);
    if (!(err2 < err)) break;
    err = err2;
    dh = dh2;
    d = d2;
    std::memcpy(codes, codes2, sizeof(codes));
    std::memcpy(levels, levels2, sizeof(levels));
  }
  std::memset(b->hmask, 0, sizeof(b->hmask));
  int low[kQK_K];
  for (int e = 0; e < kQK_K; ++e) {
    const int u = levels[e] + 4;  // 0..7
    low[e] = u & 3;
    b->hmask[e % 32] |= static_cast<uint8_t>((u >> 2) << (e / 32));
  }
  pack_low_bits(low, b->qs);
  pack_q3_k_scales(codes, b->scales);
  b->d = dh;
}

}  // namespace

// ---- Q3_K -----------------------------------------------------------------------------------

void q3_k_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    int8_t scales[kSubs], levels[kQK_K];
    unpack_q3_k_scales(b[i].scales, scales);
    q3_k_levels(b[i], levels);
    for (int e = 0; e < kQK_K; ++e) {
      const float step = d * static_cast<float>(scales[e / kSub]);
      dst[i * kQK_K + e] = step * static_cast<float>(levels[e]);
    }
  }
}

void q3_k_from_float(const float* src, void* dst, int64_t n) {
  q3_k_from_float_weighted(src, dst, n, nullptr);
}

void q3_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    encode_q3_k(src + i * kQK_K, &b[i], w != nullptr ? w + i * kQK_K : nullptr);
  }
}

float q3_k_dot(const void* row, const float* x, int64_t n) {
  return dot_by_dequant(row, sizeof(BlockQ3_K), x, n, q3_k_to_float);
}

float q3_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ3_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int8_t scales[kSubs], levels[kQK_K];
    unpack_q3_k_scales(w[i].scales, scales);
    q3_k_levels(w[i], levels);
    int32_t isum = 0;
    for (int j = 0; j < kSubs; ++j) {
      isum += scales[j] * level_dot(levels + kSub * j, a[i].qs + kSub * j);
    }
    const float d = a[i].d * f16_to_f32(w[i].d);
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

// ---- Q2_K -----------------------------------------------------------------------------------

void q2_k_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    uint8_t levels[kQK_K];
    low_bits(b[i].qs, levels);
    for (int e = 0; e < kQK_K; ++e) {
      const uint8_t sm = b[i].scales[e / kSub];
      const float step = d * static_cast<float>(sm & 15);
      const float offset = dmin * static_cast<float>(sm >> 4);
      dst[i * kQK_K + e] = step * static_cast<float>(levels[e]) - offset;
    }
  }
}

void q2_k_from_float(const float* src, void* dst, int64_t n) {
  q2_k_from_float_weighted(src, dst, n, nullptr);
}

void q2_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    encode_q2_k(src + i * kQK_K, &b[i], w != nullptr ? w + i * kQK_K : nullptr);
  }
}

float q2_k_dot(const void* row, const float* x, int64_t n) {
  return dot_by_dequant(row, sizeof(BlockQ2_K), x, n, q2_k_to_float);
}

float q2_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ2_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t levels[kQK_K];
    low_bits(w[i].qs, levels);
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < kSubs; ++j) {
      isum += (w[i].scales[j] & 15) * level_dot(levels + kSub * j, a[i].qs + kSub * j);
      msum += (w[i].scales[j] >> 4) * a[i].bsums[j];
    }
    const float d = a[i].d * f16_to_f32(w[i].d);
    const float dmin = a[i].d * f16_to_f32(w[i].dmin);
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

}  // namespace scalar

void install_scalar_kquant_low_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kQ2_K)] = {
      scalar::q2_k_to_float, scalar::q2_k_from_float, scalar::q2_k_dot, DType::kQ8_K,
      scalar::q2_k_q8_k_vec_dot};
  t.dtypes[dtype_slot(DType::kQ3_K)] = {
      scalar::q3_k_to_float, scalar::q3_k_from_float, scalar::q3_k_dot, DType::kQ8_K,
      scalar::q3_k_q8_k_vec_dot};
}

void install_avx2_kquant_low_rows(KernelTable& t) {
  auto& q2 = t.dtypes[dtype_slot(DType::kQ2_K)];
  auto& q3 = t.dtypes[dtype_slot(DType::kQ3_K)];
  TS_CHECK(q2.dot != nullptr && q3.dot != nullptr);
  q2.vec_dot = avx2::q2_k_q8_k_vec_dot;
  q3.vec_dot = avx2::q3_k_q8_k_vec_dot;
  q2.vec_dot_tile = avx2::q2_k_q8_k_vec_dot_tile;
  q3.vec_dot_tile = avx2::q3_k_q8_k_vec_dot_tile;
}

void install_avx512_kquant_low_rows(KernelTable& t) {
  auto& q2 = t.dtypes[dtype_slot(DType::kQ2_K)];
  auto& q3 = t.dtypes[dtype_slot(DType::kQ3_K)];
  TS_CHECK(q2.dot != nullptr && q3.dot != nullptr);
  q2.vec_dot = avx512::q2_k_q8_k_vec_dot;
  q3.vec_dot = avx512::q3_k_q8_k_vec_dot;
  q2.vec_dot_tile = avx512::q2_k_q8_k_vec_dot_tile;
  q3.vec_dot_tile = avx512::q3_k_q8_k_vec_dot_tile;
}

}  // namespace tessera::kernels
