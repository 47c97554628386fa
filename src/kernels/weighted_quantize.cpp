#include "tessera/kernels/weighted_quantize.h"

#include <cmath>

#include "tessera/kernels/iquants.h"
#include "tessera/kernels/kquants.h"
#include "tessera/kernels/kquants_low.h"
#include "tessera/kernels/legacy_quants.h"

namespace tessera::kernels {

WeightedFromFloatFn weighted_from_float(DType t) {
  switch (t) {
    case DType::kQ4_0: return scalar::q4_0_from_float_weighted;
    case DType::kQ4_1: return scalar::q4_1_from_float_weighted;
    case DType::kQ5_0: return scalar::q5_0_from_float_weighted;
    case DType::kQ5_1: return scalar::q5_1_from_float_weighted;
    case DType::kQ8_0: return scalar::q8_0_from_float_weighted;
    case DType::kQ2_K: return scalar::q2_k_from_float_weighted;
    case DType::kQ3_K: return scalar::q3_k_from_float_weighted;
    case DType::kQ4_K: return scalar::q4_k_from_float_weighted;
    case DType::kQ5_K: return scalar::q5_k_from_float_weighted;
    case DType::kQ6_K: return scalar::q6_k_from_float_weighted;
    case DType::kIQ4_NL: return scalar::iq4_nl_from_float_weighted;
    case DType::kIQ4_XS: return scalar::iq4_xs_from_float_weighted;
    default: return nullptr;
  }
}

void importance_weights(const float* x, const float* importance, int64_t n, float* w) {
  double sum_sq = 0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const double sigma2 = n > 0 ? sum_sq / static_cast<double>(n) : 0.0;
  // Only ratios matter to the searches: scaled so the largest importance is 1, the weighted error
  // sums stay in the range of the data's squares (no overflow in their float sums).
  double max_imp = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(importance[i]) && importance[i] > max_imp) max_imp = importance[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    const float imp = importance[i];
    const double v = std::isfinite(imp) && imp > 0.0f ? imp / max_imp : 0.0;
    w[i] = static_cast<float>(v * std::sqrt(sigma2 + static_cast<double>(x[i]) * x[i]));
  }
}

}  // namespace tessera::kernels
