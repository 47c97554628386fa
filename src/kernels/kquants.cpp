#include "tessera/kernels/kquants.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/quant_search.h"

namespace tessera::kernels {

void unpack_scale_min(const uint8_t* packed, int j, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((packed[j + 4] & 15) | ((packed[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

void pack_scales_mins(const uint8_t scales[8], const uint8_t mins[8], uint8_t packed[12]) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>((scales[j] & 63) | ((scales[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>((mins[j] & 63) | ((mins[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((scales[j + 4] & 15) | ((mins[j + 4] & 15) << 4));
  }
}

namespace scalar {
namespace {

constexpr int kSub = 32;    // Q4_K/Q5_K sub-block
constexpr int kSub6 = 16;   // Q6_K sub-block
// Q8_K blocks whose largest |x| is below this code as zero: 1/d would overflow for subnormal d.
constexpr float kMinQ8Amax = 1e-30f;

void unpack_all(const uint8_t* packed, uint8_t sc[8], uint8_t m[8]) {
  for (int j = 0; j < 8; ++j) unpack_scale_min(packed, j, &sc[j], &m[j]);
}

// The quant levels of one block in element order; see the layouts in kquant_blocks.h. Decoding a
// whole block into a flat array keeps the loops below simple enough for the compiler to vectorize.
void q4_k_levels(const BlockQ4_K& b, uint8_t out[kQK_K]) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      out[64 * g + l] = b.qs[32 * g + l] & 15;
      out[64 * g + 32 + l] = b.qs[32 * g + l] >> 4;
    }
  }
}
void q5_k_levels(const BlockQ5_K& b, uint8_t out[kQK_K]) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      out[64 * g + l] = static_cast<uint8_t>((b.qs[32 * g + l] & 15) |
                                             ((b.qh[l] >> (2 * g)) & 1) << 4);
      out[64 * g + 32 + l] = static_cast<uint8_t>((b.qs[32 * g + l] >> 4) |
                                                  ((b.qh[l] >> (2 * g + 1)) & 1) << 4);
    }
  }
}
void q6_k_levels(const BlockQ6_K& b, uint8_t out[kQK_K]) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    uint8_t* o = out + 128 * half;
    for (int l = 0; l < 32; ++l) {
      o[l] = static_cast<uint8_t>((ql[l] & 15) | (qh[l] & 3) << 4);
      o[32 + l] = static_cast<uint8_t>((ql[32 + l] & 15) | ((qh[l] >> 2) & 3) << 4);
      o[64 + l] = static_cast<uint8_t>((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4);
      o[96 + l] = static_cast<uint8_t>((ql[32 + l] >> 4) | ((qh[l] >> 6) & 3) << 4);
    }
  }
}

// sum of levels[e] * act[e] over one sub-block.
int32_t level_dot(const uint8_t* levels, const int8_t* act, int n) {
  int32_t dot = 0;
  for (int e = 0; e < n; ++e) dot += levels[e] * act[e];
  return dot;
}

// ---- Q4_K / Q5_K quantizer: an affine grid x ~ step*q - offset per 32-value sub-block. --------

// Squared error (weighted by w; null: unweighted) of coding x[0..n) on the grid (step, offset),
// each value at its nearest level. Evaluates step*q - offset exactly as the decoder does.
float affine_error(const float* x, int n, int nmax, float step, float offset, const float* w) {
  float err = 0.0f;
  const float inv = step > 0.0f ? 1.0f / step : 0.0f;
  for (int i = 0; i < n; ++i) {
    const int q = step > 0.0f ? round_clamp((x[i] + offset) * inv, 0, nmax) : 0;
    const float e = step * static_cast<float>(q) - offset - x[i];
    err += weight_at(w, i) * e * e;
  }
  return err;
}

struct Affine {
  float step = 0.0f;
  float offset = 0.0f;  // >= 0: the format stores an unsigned min
};

// Least-squares (step, offset) for fixed levels, and that fit's squared error with those levels
// (an upper bound on the error once values re-round to the fitted grid). sx and sxx are the sums
// of x and x^2, shared by every candidate. False when the levels are all equal. With weights w
// (not null) the weighted least squares; sx and sxx are then sums of w x and w x^2.
bool fit_affine(const float* x, const int* levels, int n, double sx, double sxx, Affine* out,
                double* err, const float* w) {
  // Unweighted, the sums are integers (exact: at most 32 * 31^2) and n stands for sum w.
  double sw = n, sl = 0, sll = 0;
  double sxl = 0;
  if (w != nullptr) sw = 0;
  for (int i = 0; i < n; ++i) {
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
  if (base > 0) {  // a positive base is not codable (offset >= 0): refit through the origin
    base = 0;
    step = sxl / static_cast<double>(sll);
  }
  if (step < 0) return false;  // levels rise with x, so only rounding noise gets here
  // The residual of a least-squares fit is orthogonal to the fitted terms: SSE = sum x * r.
  *err = sxx - step * sxl - base * sx;
  out->step = static_cast<float>(step);
  out->offset = static_cast<float>(-base);
  return true;
}

void assign_affine(const float* x, int n, int nmax, const Affine& a, int* levels) {
  const float inv = a.step > 0.0f ? 1.0f / a.step : 0.0f;
  for (int i = 0; i < n; ++i) levels[i] = round_clamp((x[i] + a.offset) * inv, 0, nmax);
}

// The sub-block's best grid before the 6-bit coding of step and offset; see q4_k_from_float's
// contract in kquants.h for the method.
Affine search_affine(const float* x, int nmax, const float* w) {
  float lo = 0.0f, hi = x[0];
  double sx = 0, sxx = 0;
  for (int i = 0; i < kSub; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sx += static_cast<double>(weight_at(w, i)) * x[i];
    sxx += static_cast<double>(weight_at(w, i)) * x[i] * x[i];
  }
  if (!(hi > lo)) return {0.0f, -lo};  // constant non-positive block: the offset alone codes it
  Affine best{(hi - lo) / static_cast<float>(nmax), -lo};  // the min-max grid
  double best_fit = INFINITY;
  int levels[kSub];
  for (int k = 0; k <= 12; ++k) {
    const float inv = (static_cast<float>(nmax) - 1.0f + 0.2f * static_cast<float>(k)) / (hi - lo);
    for (int i = 0; i < kSub; ++i) levels[i] = round_clamp((x[i] - lo) * inv, 0, nmax);
    Affine a;
    double fit_err = 0;
    if (fit_affine(x, levels, kSub, sx, sxx, &a, &fit_err, w) && fit_err < best_fit) {
      best_fit = fit_err;
      best = a;
    }
  }
  float best_err = affine_error(x, kSub, nmax, best.step, best.offset, w);
  for (int round = 0; round < 2; ++round) {  // Lloyd polish: re-assign levels, refit
    assign_affine(x, kSub, nmax, best, levels);
    Affine a;
    double fit_err = 0;
    if (!fit_affine(x, levels, kSub, sx, sxx, &a, &fit_err, w)) break;
    const float err = affine_error(x, kSub, nmax, a.step, a.offset, w);
    if (!(err < best_err)) break;
    best_err = err;
    best = a;
  }
  return best;
}

// Codes one 256-value super-block: packed scales/mins, f16 d/dmin, and levels (0..nmax).
void quantize_affine_superblock(const float* x, int nmax, uint16_t* d_out, uint16_t* dmin_out,
                                uint8_t packed[12], int levels[kQK_K], const float* w) {
  Affine sub[8];
  float max_step = 0.0f, max_offset = 0.0f;
  for (int j = 0; j < 8; ++j) {
    sub[j] = search_affine(x + kSub * j, nmax, w != nullptr ? w + kSub * j : nullptr);
    max_step = std::max(max_step, sub[j].step);
    max_offset = std::max(max_offset, sub[j].offset);
  }
  *d_out = f32_to_f16(max_step / 63.0f);
  *dmin_out = f32_to_f16(max_offset / 63.0f);
  const float d = f16_to_f32(*d_out);
  const float dmin = f16_to_f32(*dmin_out);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    const float* xj = x + kSub * j;
    // Both roundings of each 6-bit code; the pair with the least error wins.
    const float rs = d > 0.0f ? sub[j].step / d : 0.0f;
    const float rm = dmin > 0.0f ? sub[j].offset / dmin : 0.0f;
    const int s_lo = round_clamp(std::floor(rs), 0, 63), s_hi = round_clamp(std::ceil(rs), 0, 63);
    const int m_lo = round_clamp(std::floor(rm), 0, 63), m_hi = round_clamp(std::ceil(rm), 0, 63);
    float best_err = INFINITY;
    sc[j] = static_cast<uint8_t>(s_lo);
    m[j] = static_cast<uint8_t>(m_lo);
    for (int s : {s_lo, s_hi}) {
      for (int mm : {m_lo, m_hi}) {
        const float err = affine_error(xj, kSub, nmax, d * static_cast<float>(s),
                                       dmin * static_cast<float>(mm),
                                       w != nullptr ? w + kSub * j : nullptr);
        if (err < best_err) {
          best_err = err;
          sc[j] = static_cast<uint8_t>(s);
          m[j] = static_cast<uint8_t>(mm);
        }
      }
    }
    assign_affine(xj, kSub, nmax, {d * static_cast<float>(sc[j]), dmin * static_cast<float>(m[j])},
                  levels + kSub * j);
  }
  pack_scales_mins(sc, m, packed);
}

// ---- Q6_K quantizer: a signed step x ~ step*q, q in -32..31, per 16-value sub-block. ----------

float symmetric_error(const float* x, int n, float step, const float* w) {
  float err = 0.0f;
  const float inv = step != 0.0f ? 1.0f / step : 0.0f;
  for (int i = 0; i < n; ++i) {
    const int q = round_clamp(x[i] * inv, -32, 31);
    const float e = step * static_cast<float>(q) - x[i];
    err += weight_at(w, i) * e * e;
  }
  return err;
}

float search_symmetric(const float* x, const float* w) {
  float amax = 0.0f, vmax = 0.0f;
  double sxx = 0;
  for (int i = 0; i < kSub6; ++i) {
    sxx += static_cast<double>(weight_at(w, i)) * x[i] * x[i];
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  // The extreme value goes to the negative end, which has one level more (-32 vs 31).
  float best = vmax / -32.0f;
  double best_fit = INFINITY;
  int levels[kSub6];
  for (int k = -5; k <= 5; ++k) {
    const float inv = -(32.0f + 0.2f * static_cast<float>(k)) / vmax;
    for (int i = 0; i < kSub6; ++i) levels[i] = round_clamp(x[i] * inv, -32, 31);
    double fit_err = 0;
    const float step = fit_symmetric(x, levels, kSub6, sxx, &fit_err, w);
    if (fit_err < best_fit) {
      best_fit = fit_err;
      best = step;
    }
  }
  float best_err = symmetric_error(x, kSub6, best, w);
  for (int round = 0; round < 2; ++round) {
    const float inv = best != 0.0f ? 1.0f / best : 0.0f;
    for (int i = 0; i < kSub6; ++i) levels[i] = round_clamp(x[i] * inv, -32, 31);
    double fit_err = 0;
    const float step = fit_symmetric(x, levels, kSub6, sxx, &fit_err, w);
    const float err = symmetric_error(x, kSub6, step, w);
    if (!(err < best_err)) break;
    best_err = err;
    best = step;
  }
  return best;
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

}  // namespace

// ---- Q4_K -----------------------------------------------------------------------------------

void q4_k_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    uint8_t sc[8], m[8], levels[kQK_K];
    unpack_all(b[i].scales, sc, m);
    q4_k_levels(b[i], levels);
    for (int e = 0; e < kQK_K; ++e) {
      const float step = d * static_cast<float>(sc[e / kSub]);
      const float offset = dmin * static_cast<float>(m[e / kSub]);
      dst[i * kQK_K + e] = step * static_cast<float>(levels[e]) - offset;
    }
  }
}

void q4_k_from_float(const float* src, void* dst, int64_t n) {
  q4_k_from_float_weighted(src, dst, n, nullptr);
}

void q4_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockQ4_K*>(dst);
  int levels[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    quantize_affine_superblock(src + i * kQK_K, 15, &b[i].d, &b[i].dmin, b[i].scales, levels,
                               w != nullptr ? w + i * kQK_K : nullptr);
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        b[i].qs[32 * g + l] =
            static_cast<uint8_t>(levels[64 * g + l] | levels[64 * g + 32 + l] << 4);
      }
    }
  }
}

float q4_k_dot(const void* row, const float* x, int64_t n) {
  return dot_by_dequant(row, sizeof(BlockQ4_K), x, n, q4_k_to_float);
}

float q4_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ4_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8], levels[kQK_K];
    unpack_all(w[i].scales, sc, m);
    q4_k_levels(w[i], levels);
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      isum += sc[j] * level_dot(levels + kSub * j, a[i].qs + kSub * j, kSub);
      msum += m[j] * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
    }
    const float d = a[i].d * f16_to_f32(w[i].d);
    const float dmin = a[i].d * f16_to_f32(w[i].dmin);
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

// ---- Q5_K -----------------------------------------------------------------------------------

void q5_k_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    uint8_t sc[8], m[8], levels[kQK_K];
    unpack_all(b[i].scales, sc, m);
    q5_k_levels(b[i], levels);
    for (int e = 0; e < kQK_K; ++e) {
      const float step = d * static_cast<float>(sc[e / kSub]);
      const float offset = dmin * static_cast<float>(m[e / kSub]);
      dst[i * kQK_K + e] = step * static_cast<float>(levels[e]) - offset;
    }
  }
}

void q5_k_from_float(const float* src, void* dst, int64_t n) {
  q5_k_from_float_weighted(src, dst, n, nullptr);
}

void q5_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockQ5_K*>(dst);
  int levels[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    quantize_affine_superblock(src + i * kQK_K, 31, &b[i].d, &b[i].dmin, b[i].scales, levels,
                               w != nullptr ? w + i * kQK_K : nullptr);
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        const int lo = levels[64 * g + l];
        const int hi = levels[64 * g + 32 + l];
        b[i].qs[32 * g + l] = static_cast<uint8_t>((lo & 15) | (hi & 15) << 4);
        b[i].qh[l] |= static_cast<uint8_t>((lo >> 4) << (2 * g) | (hi >> 4) << (2 * g + 1));
      }
    }
  }
}

float q5_k_dot(const void* row, const float* x, int64_t n) {
  return dot_by_dequant(row, sizeof(BlockQ5_K), x, n, q5_k_to_float);
}

float q5_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ5_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t sc[8], m[8], levels[kQK_K];
    unpack_all(w[i].scales, sc, m);
    q5_k_levels(w[i], levels);
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      isum += sc[j] * level_dot(levels + kSub * j, a[i].qs + kSub * j, kSub);
      msum += m[j] * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
    }
    const float d = a[i].d * f16_to_f32(w[i].d);
    const float dmin = a[i].d * f16_to_f32(w[i].dmin);
    sum += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sum;
}

// ---- Q6_K -----------------------------------------------------------------------------------

void q6_k_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    uint8_t levels[kQK_K];
    q6_k_levels(b[i], levels);
    for (int e = 0; e < kQK_K; ++e) {
      const float step = d * static_cast<float>(b[i].scales[e / kSub6]);
      dst[i * kQK_K + e] = step * static_cast<float>(levels[e] - 32);
    }
  }
}

void q6_k_from_float(const float* src, void* dst, int64_t n) {
  q6_k_from_float_weighted(src, dst, n, nullptr);
}

void q6_k_from_float_weighted(const float* src, void* dst, int64_t n, const float* wrow) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    const float* w = wrow != nullptr ? wrow + i * kQK_K : nullptr;
    const auto sub_w = [&](int j) { return w != nullptr ? w + kSub6 * j : nullptr; };
    float steps[kQK_K / kSub6];
    float big = 0.0f;
    for (int j = 0; j < kQK_K / kSub6; ++j) {
      steps[j] = search_symmetric(x + kSub6 * j, sub_w(j));
      if (std::fabs(steps[j]) > std::fabs(big)) big = steps[j];
    }
    std::memset(&b[i], 0, sizeof(BlockQ6_K));
    // The step of largest magnitude codes as -128, the end of int8 with one value more.
    b[i].d = f32_to_f16(big / -128.0f);
    const float d = f16_to_f32(b[i].d);
    if (d == 0.0f) {  // all zero, or below f16's range: d = +0 and every level 32 decode to +0
      b[i].d = 0;
      for (auto& h : b[i].qh) h = 0xaa;  // high bits 0b10 in each field, low nibbles 0: level 32
      continue;
    }
    int levels[kQK_K];
    for (int j = 0; j < kQK_K / kSub6; ++j) {
      const float* xj = x + kSub6 * j;
      const float r = steps[j] / d;
      const int lo = round_clamp(std::floor(r), -128, 127);
      const int hi = round_clamp(std::ceil(r), -128, 127);
      const float err_lo = symmetric_error(xj, kSub6, d * static_cast<float>(lo), sub_w(j));
      const float err_hi = symmetric_error(xj, kSub6, d * static_cast<float>(hi), sub_w(j));
      const int sc = err_hi < err_lo ? hi : lo;
      b[i].scales[j] = static_cast<int8_t>(sc);
      const float step = d * static_cast<float>(sc);
      const float inv = step != 0.0f ? 1.0f / step : 0.0f;
      for (int l = 0; l < kSub6; ++l) {
        levels[kSub6 * j + l] = round_clamp(xj[l] * inv, -32, 31) + 32;
      }
    }
    for (int half = 0; half < 2; ++half) {
      const int* lv = levels + 128 * half;
      for (int l = 0; l < 32; ++l) {
        uint8_t* ql = b[i].ql + 64 * half;
        ql[l] = static_cast<uint8_t>((lv[l] & 15) | (lv[64 + l] & 15) << 4);
        ql[32 + l] = static_cast<uint8_t>((lv[32 + l] & 15) | (lv[96 + l] & 15) << 4);
        b[i].qh[32 * half + l] = static_cast<uint8_t>(
            lv[l] >> 4 | (lv[32 + l] >> 4) << 2 | (lv[64 + l] >> 4) << 4 | (lv[96 + l] >> 4) << 6);
      }
    }
  }
}

float q6_k_dot(const void* row, const float* x, int64_t n) {
  return dot_by_dequant(row, sizeof(BlockQ6_K), x, n, q6_k_to_float);
}

float q6_k_q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* w = static_cast<const BlockQ6_K*>(row);
  const auto* a = static_cast<const BlockQ8_K*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t levels[kQK_K];
    q6_k_levels(w[i], levels);
    int32_t isum = 0;
    for (int j = 0; j < kQK_K / kSub6; ++j) {
      const int32_t dot = level_dot(levels + kSub6 * j, a[i].qs + kSub6 * j, kSub6);
      // The levels carry +32; bsums removes it without touching each product.
      isum += w[i].scales[j] * (dot - 32 * a[i].bsums[j]);
    }
    const float d = a[i].d * f16_to_f32(w[i].d);
    sum += d * static_cast<float>(isum);
  }
  return sum;
}

// ---- Q8_K -----------------------------------------------------------------------------------

void q8_k_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    for (int e = 0; e < kQK_K; ++e) dst[i * kQK_K + e] = b[i].d * static_cast<float>(b[i].qs[e]);
  }
}

void q8_k_from_float(const float* src, void* dst, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    float amax = 0.0f;
    for (int e = 0; e < kQK_K; ++e) amax = std::max(amax, std::fabs(x[e]));  // NaN ignored
    if (!(amax >= kMinQ8Amax)) {
      std::memset(&b[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float d = amax / 127.0f;
    const float id = 1.0f / d;
    b[i].d = d;
    for (int e = 0; e < kQK_K; ++e) {
      b[i].qs[e] = static_cast<int8_t>(round_clamp(x[e] * id, -127, 127));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int e = 16 * g; e < 16 * (g + 1); ++e) sum += b[i].qs[e];
      b[i].bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

float q8_k_dot(const void* row, const float* x, int64_t n) {
  TS_CHECK(n % kQK_K == 0);
  const auto* b = static_cast<const BlockQ8_K*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* xb = x + i * kQK_K;
    float block = 0.0f;
    for (int e = 0; e < kQK_K; ++e) block += static_cast<float>(b[i].qs[e]) * xb[e];
    sum += b[i].d * block;
  }
  return sum;
}

float q8_k_vec_dot(const void* row, const void* x, int64_t n) {
  return q8_k_dot(row, static_cast<const float*>(x), n);
}

}  // namespace scalar

void install_avx2_kquant_rows(KernelTable& t) {
  auto& q4 = t.dtypes[dtype_slot(DType::kQ4_K)];
  auto& q5 = t.dtypes[dtype_slot(DType::kQ5_K)];
  auto& q6 = t.dtypes[dtype_slot(DType::kQ6_K)];
  auto& q8 = t.dtypes[dtype_slot(DType::kQ8_K)];
  TS_CHECK(q4.dot != nullptr && q5.dot != nullptr && q6.dot != nullptr && q8.dot != nullptr);
  q4.vec_dot = avx2::q4_k_q8_k_vec_dot;
  q5.vec_dot = avx2::q5_k_q8_k_vec_dot;
  q6.vec_dot = avx2::q6_k_q8_k_vec_dot;
  q8.from_float = avx2::q8_k_from_float;
}

}  // namespace tessera::kernels
