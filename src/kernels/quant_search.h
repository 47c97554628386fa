// Building blocks the scalar quantizers share (kquants.cpp, kquants_low.cpp, legacy_quants.cpp,
// iquants.cpp): rounding to a clamped integer level, the least-squares step for fixed levels, and
// the per-value weights of the importance-weighted searches (weighted_quantize.h).
// Internal to the kernels layer. Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>

namespace tessera::kernels {

// Round half to even of v clamped to [lo, hi]; NaN goes to lo. Clamping first keeps NaN and huge
// values from the float-to-int conversion (undefined); after the clamp |v| < 2^22, where adding
// and removing 1.5 * 2^23 rounds to an integer in the default rounding mode. Inline, unlike
// nearbyint, because the quantizers call it tens of times per value.
inline int round_clamp(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) v = static_cast<float>(lo);
  if (v > static_cast<float>(hi)) v = static_cast<float>(hi);
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return static_cast<int>((v + kMagic) - kMagic);
}

// The weight of value i in an error sum: w[i], or 1 when `w` is null. The searches multiply each
// term by it; a product by 1.0f is exact, so a search without weights gives the same bits as the
// unweighted sums it replaced (the files `tessera quantize` writes without --imatrix stay as they
// were).
inline float weight_at(const float* w, int i) { return w != nullptr ? w[i] : 1.0f; }

// The least-squares step s of x ~ s * levels over n values (0 when every level is 0), and in *err
// that fit's squared error, given sxx = sum of x^2 (with weights w, null: all 1: the weighted
// least squares, sxx = sum of w x^2 and *err the weighted error).
inline float fit_symmetric(const float* x, const int* levels, int n, double sxx, double* err,
                           const float* w = nullptr) {
  if (w != nullptr) {
    double swll = 0, swxl = 0;
    for (int i = 0; i < n; ++i) {
      swxl += static_cast<double>(w[i]) * x[i] * levels[i];
      swll += static_cast<double>(w[i]) * levels[i] * levels[i];
    }
    const double step = swll > 0 ? swxl / swll : 0.0;
    *err = sxx - step * swxl;
    return static_cast<float>(step);
  }
  int64_t sll = 0;
  double sxl = 0;
  for (int i = 0; i < n; ++i) {
    sxl += static_cast<double>(x[i]) * levels[i];
    sll += levels[i] * levels[i];
  }
  const double step = sll > 0 ? sxl / static_cast<double>(sll) : 0.0;
  *err = sxx - step * sxl;
  return static_cast<float>(step);
}

// sum of w x^2 over n values (w null: all 1), in double.
inline double weighted_sxx(const float* x, int n, const float* w) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<double>(weight_at(w, i)) * x[i] * x[i];
  return s;
}

}  // namespace tessera::kernels
