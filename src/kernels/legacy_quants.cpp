#include "tessera/kernels/legacy_quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/quant_search.h"

namespace tessera::kernels {
namespace scalar {
namespace {

constexpr int kQK = kQKLegacy;
constexpr int kHalf = kQK / 2;

uint32_t load_qh(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

// Levels of one block in element order (layouts in legacy_quant_blocks.h).
void nibble_levels(const uint8_t qs[kHalf], uint8_t out[kQK]) {
  for (int j = 0; j < kHalf; ++j) {
    out[j] = qs[j] & 15;
    out[j + kHalf] = qs[j] >> 4;
  }
}
void five_bit_levels(const uint8_t qh[4], const uint8_t qs[kHalf], uint8_t out[kQK]) {
  nibble_levels(qs, out);
  const uint32_t h = load_qh(qh);
  for (int e = 0; e < kQK; ++e) out[e] = static_cast<uint8_t>(out[e] | ((h >> e) & 1u) << 4);
}

// Inverse of the two functions above. Precondition: levels < 16 (nibbles) or < 32.
void pack_nibbles(const int levels[kQK], uint8_t qs[kHalf]) {
  for (int j = 0; j < kHalf; ++j) {
    qs[j] = static_cast<uint8_t>((levels[j] & 15) | (levels[j + kHalf] & 15) << 4);
  }
}
void pack_five_bits(const int levels[kQK], uint8_t qh[4], uint8_t qs[kHalf]) {
  pack_nibbles(levels, qs);
  uint32_t h = 0;
  for (int e = 0; e < kQK; ++e) h |= static_cast<uint32_t>((levels[e] >> 4) & 1) << e;
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(h >> (8 * k));
}

// ---- Symmetric quantizer: x ~ d * l, l in lo..hi (Q5_0; the weighted Q4_0 and Q8_0) ----------

// The level range of a symmetric block format and its weights (null: unweighted).
struct SymmetricGrid {
  int lo, hi;
  const float* w;
};

// Squared error (weighted by g.w) of coding x on the step d (already f16-representable), each
// value at its nearest level, evaluated as the decoder computes d * l.
float symmetric_error(const float* x, float d, const SymmetricGrid& g) {
  if (d == 0.0f) {
    float err = 0.0f;
    for (int i = 0; i < kQK; ++i) err += weight_at(g.w, i) * x[i] * x[i];
    return err;
  }
  const float inv = 1.0f / d;
  float err = 0.0f;
  for (int i = 0; i < kQK; ++i) {
    const float e = d * static_cast<float>(round_clamp(x[i] * inv, g.lo, g.hi)) - x[i];
    err += weight_at(g.w, i) * e * e;
  }
  return err;
}

// From 2.5 below to 1 above the negative end's level count to the peak, in quarters (13.5 .. 17
// for Q5_0). (Eighths and a Lloyd polish were tried: they gain under 0.1% of RMS error on N(0,1)
// data, for twice the time.)
constexpr int kSymmetricTries = 15;

// The f16 step of least (weighted) error for one block; see q5_0_from_float's contract.
uint16_t search_symmetric(const float* x, const SymmetricGrid& g) {
  float amax = 0.0f, peak = 0.0f;
  for (int i = 0; i < kQK; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      peak = x[i];
    }
  }
  if (amax == 0.0f) return 0;
  uint16_t best = f32_to_f16(peak / static_cast<float>(g.lo));  // GGML's choice, as a baseline
  float best_err = symmetric_error(x, f16_to_f32(best), g);
  auto consider = [&](float d) {
    const uint16_t h = f32_to_f16(d);
    const float err = symmetric_error(x, f16_to_f32(h), g);
    if (err < best_err) {
      best_err = err;
      best = h;
    }
  };
  // Least-squares step for the levels d assigns: sum w x l / sum w l^2 (0 when every level is 0).
  auto refit = [&](float d) {
    const float inv = 1.0f / d;
    double sxl = 0, sll = 0;
    for (int i = 0; i < kQK; ++i) {
      const int l = round_clamp(x[i] * inv, g.lo, g.hi);
      const double wi = weight_at(g.w, i);
      sxl += wi * x[i] * l;
      sll += wi * l * l;
    }
    return sll > 0 ? static_cast<float>(sxl / sll) : 0.0f;
  };
  const float first = static_cast<float>(-g.lo) - 2.5f;
  for (int sign = -1; sign <= 1; sign += 2) {
    for (int k = 0; k < kSymmetricTries; ++k) {
      const float levels_to_peak = first + 0.25f * static_cast<float>(k);
      const float d = peak / (static_cast<float>(sign) * levels_to_peak);
      consider(d);
      consider(refit(d));
    }
  }
  return best;
}

// Codes n values as blocks of f16 step + levels in g's range; pack(levels + offset) writes one.
template <class Block, class Pack>
void symmetric_from_float(const float* src, Block* b, int64_t n, int lo, int hi,
                          const float* w, Pack pack) {
  int levels[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    const SymmetricGrid g{lo, hi, w != nullptr ? w + i * kQK : nullptr};
    b[i].d = search_symmetric(x, g);
    const float d = f16_to_f32(b[i].d);
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    for (int e = 0; e < kQK; ++e) levels[e] = round_clamp(x[e] * inv, lo, hi);
    pack(levels, b[i]);
  }
}

// ---- Q4_1 / Q5_1 quantizer: x ~ d * q + m, q in 0..nmax ------------------------------------

struct Affine {
  uint16_t d = 0;  // f16
  uint16_t m = 0;  // f16
};

// Squared error (weighted by w; null: unweighted) of the coded grid (d, m), each value at its
// nearest level; levels out if asked.
float affine_error(const float* x, int nmax, Affine a, int* levels, const float* w) {
  const float d = f16_to_f32(a.d), m = f16_to_f32(a.m);
  const float inv = d > 0.0f ? 1.0f / d : 0.0f;
  float err = 0.0f;
  for (int i = 0; i < kQK; ++i) {
    const int q = d > 0.0f ? round_clamp((x[i] - m) * inv, 0, nmax) : 0;
    if (levels != nullptr) levels[i] = q;
    const float e = d * static_cast<float>(q) + m - x[i];
    err += weight_at(w, i) * e * e;
  }
  return err;
}

// Least-squares (step, base) for fixed levels, coded as f16. False when the levels are all equal
// or the fitted step is not positive. Weighted by w when it is not null.
bool fit_affine(const float* x, const int* levels, Affine* out, const float* w) {
  if (w != nullptr) {
    double sw = 0, sl = 0, sll = 0, sx = 0, sxl = 0;
    for (int i = 0; i < kQK; ++i) {
      const double wi = w[i];
      sw += wi;
      sl += wi * levels[i];
      sll += wi * levels[i] * levels[i];
      sx += wi * x[i];
      sxl += wi * x[i] * levels[i];
    }
    const double det = sw * sll - sl * sl;
    if (!(det > 0)) return false;
    const double step = (sw * sxl - sx * sl) / det;
    const double base = (sll * sx - sl * sxl) / det;
    if (!(step > 0)) return false;
    out->d = f32_to_f16(static_cast<float>(step));
    out->m = f32_to_f16(static_cast<float>(base));
    return true;
  }
  int64_t sl = 0, sll = 0;
  double sx = 0, sxl = 0;
  for (int i = 0; i < kQK; ++i) {
    sl += levels[i];
    sll += levels[i] * levels[i];
    sx += x[i];
    sxl += static_cast<double>(x[i]) * levels[i];
  }
  const int64_t det = kQK * sll - sl * sl;
  if (det <= 0) return false;
  const double step = (kQK * sxl - sx * static_cast<double>(sl)) / static_cast<double>(det);
  const double base = (static_cast<double>(sll) * sx - static_cast<double>(sl) * sxl) /
                      static_cast<double>(det);
  if (!(step > 0)) return false;
  out->d = f32_to_f16(static_cast<float>(step));
  out->m = f32_to_f16(static_cast<float>(base));
  return true;
}

// The coded grid of least (weighted) error for one block and its levels; see q4_1_from_float's
// contract.
Affine search_affine(const float* x, int nmax, int levels[kQK], const float* w) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kQK; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  Affine best{f32_to_f16((hi - lo) / static_cast<float>(nmax)), f32_to_f16(lo)};  // GGML's grid
  float best_err = affine_error(x, nmax, best, nullptr, w);
  auto consider = [&](Affine a) {
    const float err = affine_error(x, nmax, a, nullptr, w);
    if (err < best_err) {
      best_err = err;
      best = a;
    }
  };
  if (hi > lo) {
    int cand[kQK];
    for (int k = 0; k <= 12; ++k) {
      const float inv =
          (static_cast<float>(nmax) - 1.0f + 0.2f * static_cast<float>(k)) / (hi - lo);
      for (int i = 0; i < kQK; ++i) cand[i] = round_clamp((x[i] - lo) * inv, 0, nmax);
      Affine a;
      if (fit_affine(x, cand, &a, w)) consider(a);
    }
    for (int round = 0; round < 2; ++round) {  // Lloyd polish: re-assign levels, refit
      affine_error(x, nmax, best, cand, w);
      Affine a;
      if (!fit_affine(x, cand, &a, w)) break;
      const float before = best_err;
      consider(a);
      if (!(best_err < before)) break;
    }
  }
  affine_error(x, nmax, best, levels, w);
  return best;
}

// sum over one block of (level - offset) * a, in integers.
int32_t level_dot(const uint8_t levels[kQK], const int8_t* a) {
  int32_t s = 0;
  for (int e = 0; e < kQK; ++e) s += levels[e] * a[e];
  return s;
}
int32_t quant_sum(const int8_t* a) {
  int32_t s = 0;
  for (int e = 0; e < kQK; ++e) s += a[e];
  return s;
}

}  // namespace

// ---- Q5_0 -----------------------------------------------------------------------------------

void q5_0_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK == 0);
  const auto* b = static_cast<const BlockQ5_0*>(src);
  uint8_t l[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = f16_to_f32(b[i].d);
    five_bit_levels(b[i].qh, b[i].qs, l);
    for (int e = 0; e < kQK; ++e) dst[i * kQK + e] = d * static_cast<float>(l[e] - 16);
  }
}

void q5_0_from_float(const float* src, void* dst, int64_t n) {
  q5_0_from_float_weighted(src, dst, n, nullptr);
}

void q5_0_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK == 0);
  symmetric_from_float(src, static_cast<BlockQ5_0*>(dst), n, -16, 15, w,
                       [](const int* levels, BlockQ5_0& b) {
                         int u[kQK];
                         for (int e = 0; e < kQK; ++e) u[e] = levels[e] + 16;
                         pack_five_bits(u, b.qh, b.qs);
                       });
}

void q4_0_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK == 0);
  symmetric_from_float(src, static_cast<BlockQ4_0*>(dst), n, -8, 7, w,
                       [](const int* levels, BlockQ4_0& b) {
                         int u[kQK];
                         for (int e = 0; e < kQK; ++e) u[e] = levels[e] + 8;
                         pack_nibbles(u, b.qs);
                       });
}

// Q8_0's levels stop at -127: the SIMD dot products assume |level| <= 127.
void q8_0_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK == 0);
  symmetric_from_float(src, static_cast<BlockQ8_0*>(dst), n, -127, 127, w,
                       [](const int* levels, BlockQ8_0& b) {
                         for (int e = 0; e < kQK; ++e) b.qs[e] = static_cast<int8_t>(levels[e]);
                       });
}

float q5_0_dot(const void* row, const float* x, int64_t n) {
  TS_CHECK(n % kQK == 0);
  const auto* b = static_cast<const BlockQ5_0*>(row);
  uint8_t l[kQK];
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    five_bit_levels(b[i].qh, b[i].qs, l);
    float block = 0.0f;
    for (int e = 0; e < kQK; ++e) block += static_cast<float>(l[e] - 16) * x[i * kQK + e];
    sum += f16_to_f32(b[i].d) * block;
  }
  return sum;
}

float q5_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK == 0);
  const auto* w = static_cast<const BlockQ5_0*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  uint8_t l[kQK];
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    five_bit_levels(w[i].qh, w[i].qs, l);
    const int32_t s = level_dot(l, a[i].qs) - 16 * quant_sum(a[i].qs);
    sum += f16_to_f32(w[i].d) * f16_to_f32(a[i].d) * static_cast<float>(s);
  }
  return sum;
}

// ---- Q4_1 / Q5_1 ----------------------------------------------------------------------------

namespace {

// Shared by the two affine formats: `Block` has d, m, qs (and qh when five_bits).
template <class Block, bool kFiveBits>
void levels_of(const Block& b, uint8_t l[kQK]) {
  if constexpr (kFiveBits) {
    five_bit_levels(b.qh, b.qs, l);
  } else {
    nibble_levels(b.qs, l);
  }
}

template <class Block, bool kFiveBits>
void affine_to_float(const void* src, float* dst, int64_t n) {
  TS_CHECK(n % kQK == 0);
  const auto* b = static_cast<const Block*>(src);
  uint8_t l[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    levels_of<Block, kFiveBits>(b[i], l);
    for (int e = 0; e < kQK; ++e) dst[i * kQK + e] = d * static_cast<float>(l[e]) + m;
  }
}

template <class Block, bool kFiveBits>
void affine_from_float(const float* src, void* dst, int64_t n, const float* w) {
  TS_CHECK(n % kQK == 0);
  auto* b = static_cast<Block*>(dst);
  int levels[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const Affine a = search_affine(src + i * kQK, kFiveBits ? 31 : 15, levels,
                                   w != nullptr ? w + i * kQK : nullptr);
    b[i].d = a.d;
    b[i].m = a.m;
    if constexpr (kFiveBits) {
      pack_five_bits(levels, b[i].qh, b[i].qs);
    } else {
      pack_nibbles(levels, b[i].qs);
    }
  }
}

template <class Block, bool kFiveBits>
float affine_dot(const void* row, const float* x, int64_t n) {
  TS_CHECK(n % kQK == 0);
  const auto* b = static_cast<const Block*>(row);
  uint8_t l[kQK];
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    levels_of<Block, kFiveBits>(b[i], l);
    float lx = 0.0f, sx = 0.0f;
    for (int e = 0; e < kQK; ++e) {
      lx += static_cast<float>(l[e]) * x[i * kQK + e];
      sx += x[i * kQK + e];
    }
    sum += f16_to_f32(b[i].d) * lx + f16_to_f32(b[i].m) * sx;
  }
  return sum;
}

template <class Block, bool kFiveBits>
float affine_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQK == 0);
  const auto* w = static_cast<const Block*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  uint8_t l[kQK];
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    levels_of<Block, kFiveBits>(w[i], l);
    const int32_t s = level_dot(l, a[i].qs);
    const int32_t t = quant_sum(a[i].qs);
    const float dx = f16_to_f32(a[i].d);
    sum += f16_to_f32(w[i].d) * dx * static_cast<float>(s) +
           f16_to_f32(w[i].m) * dx * static_cast<float>(t);
  }
  return sum;
}

}  // namespace

void q4_1_to_float(const void* src, float* dst, int64_t n) {
  affine_to_float<BlockQ4_1, false>(src, dst, n);
}
void q4_1_from_float(const float* src, void* dst, int64_t n) {
  affine_from_float<BlockQ4_1, false>(src, dst, n, nullptr);
}
void q4_1_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  affine_from_float<BlockQ4_1, false>(src, dst, n, w);
}
float q4_1_dot(const void* row, const float* x, int64_t n) {
  return affine_dot<BlockQ4_1, false>(row, x, n);
}
float q4_1_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  return affine_vec_dot<BlockQ4_1, false>(row, x, n);
}

void q5_1_to_float(const void* src, float* dst, int64_t n) {
  affine_to_float<BlockQ5_1, true>(src, dst, n);
}
void q5_1_from_float(const float* src, void* dst, int64_t n) {
  affine_from_float<BlockQ5_1, true>(src, dst, n, nullptr);
}
void q5_1_from_float_weighted(const float* src, void* dst, int64_t n, const float* w) {
  affine_from_float<BlockQ5_1, true>(src, dst, n, w);
}
float q5_1_dot(const void* row, const float* x, int64_t n) {
  return affine_dot<BlockQ5_1, true>(row, x, n);
}
float q5_1_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  return affine_vec_dot<BlockQ5_1, true>(row, x, n);
}

}  // namespace scalar

void install_scalar_legacy_quant_rows(KernelTable& t) {
  auto& q4_1 = t.dtypes[dtype_slot(DType::kQ4_1)];
  q4_1 = {scalar::q4_1_to_float, scalar::q4_1_from_float, scalar::q4_1_dot, DType::kQ8_0,
          scalar::q4_1_q8_0_vec_dot};
  auto& q5_0 = t.dtypes[dtype_slot(DType::kQ5_0)];
  q5_0 = {scalar::q5_0_to_float, scalar::q5_0_from_float, scalar::q5_0_dot, DType::kQ8_0,
          scalar::q5_0_q8_0_vec_dot};
  auto& q5_1 = t.dtypes[dtype_slot(DType::kQ5_1)];
  q5_1 = {scalar::q5_1_to_float, scalar::q5_1_from_float, scalar::q5_1_dot, DType::kQ8_0,
          scalar::q5_1_q8_0_vec_dot};
}

}  // namespace tessera::kernels
