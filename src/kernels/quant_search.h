// Building blocks the scalar quantizers share (kquants.cpp, kquants_low.cpp, legacy_quants.cpp):
// rounding to a clamped integer level and the least-squares step for fixed levels.
// Internal to the kernels layer. Thread-safety: pure functions.
#pragma once

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

// The least-squares step s of x ~ s * levels over n values (0 when every level is 0), and in *err
// that fit's squared error, given sxx = sum of x^2.
inline float fit_symmetric(const float* x, const int* levels, int n, double sxx, double* err) {
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

}  // namespace tessera::kernels
