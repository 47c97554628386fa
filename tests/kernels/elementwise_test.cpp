// Elementwise kernels: the AVX2 SiLU-gate against the scalar reference (std::exp), including the
// ends of the range where e^-g overflows or underflows, Gemma's GELU-tanh gate and soft-cap
// against float64, and rope's two-step form against rope().
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tessera/kernels/avx2_kernels.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/ops.h"
#include "tessera/kernels/scalar_kernels.h"

namespace tessera::kernels {
namespace elementwise_test {

TEST(SiluMul, Avx2MatchesReference) {
  if (!cpu_features().has_avx2_set()) GTEST_SKIP() << "this CPU has no AVX2/FMA/F16C";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-20.0f, 20.0f);
  std::vector<float> gate;
  for (int i = 0; i < 4096; ++i) gate.push_back(wide(rng));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 80.0f, -80.0f, 87.5f, -87.5f, 88.5f, -88.5f, 100.0f,
                  -100.0f, 1e4f, -1e4f, std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max()}) {
    gate.push_back(v);
  }
  gate.push_back(1.5f);  // n % 8 != 0: the scalar tail
  std::vector<float> up(gate.size());
  for (auto& u : up) u = wide(rng) / 10.0f;
  std::vector<float> want = gate, got = gate;
  scalar::silu_mul(want.data(), up.data(), static_cast<int64_t>(want.size()));
  avx2::silu_mul(got.data(), up.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    if (!std::isfinite(want[i])) {  // FLT_MAX * up overflows in both
      EXPECT_EQ(got[i], want[i]) << "g=" << gate[i];
      continue;
    }
    EXPECT_NEAR(got[i], want[i], 2e-6f * std::fabs(want[i]) + 1e-30f) << "g=" << gate[i] << " up=" << up[i];
  }
}

TEST(SiluMul, ActiveTableHasOne) {
  std::vector<float> g = {-1.0f, 0.0f, 2.0f}, u = {1.0f, 1.0f, 1.0f};
  silu_mul(g.data(), u.data(), 3);
  EXPECT_NEAR(g[0], -1.0f / (1.0f + std::exp(1.0f)), 1e-6f);
  EXPECT_EQ(g[1], 0.0f);
  EXPECT_NEAR(g[2], 2.0f / (1.0f + std::exp(-2.0f)), 1e-6f);
}

// Gemma's GeGLU gate and logit soft-cap against float64, over the range where tanh saturates.
TEST(GeluTanhMul, MatchesFloat64) {
  std::vector<float> g, u;
  for (float x = -12.0f; x <= 12.0f; x += 0.037f) {
    g.push_back(x);
    u.push_back(0.5f - x / 30.0f);
  }
  std::vector<float> got = g;
  gelu_tanh_mul(got.data(), u.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = g[i];
    const double want =
        0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x))) * u[i];
    EXPECT_NEAR(got[i], want, 1e-6 * std::fabs(want) + 1e-7) << "g=" << x;
  }
}

TEST(Softcap, MatchesFloat64AndKeepsOrder) {
  std::vector<float> x = {-1000.0f, -31.0f, -3.0f, 0.0f, 0.5f, 29.0f, 30.0f, 1e6f};
  std::vector<float> got = x;
  softcap(got.data(), static_cast<int64_t>(got.size()), 30.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(got[i], 30.0 * std::tanh(x[i] / 30.0), 2e-6 * 30.0) << x[i];
    if (i > 0) {
      EXPECT_LE(got[i - 1], got[i]);
    }
  }
}

TEST(Rope, TwoStepsEqualOneBitwise) {
  const int64_t H = 64, n_heads = 3;
  std::vector<float> inv(H / 2);
  for (int64_t i = 0; i < H / 2; ++i) inv[i] = std::pow(10000.0f, -2.0f * static_cast<float>(i) / H);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int64_t pos : {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{4095}, int64_t{100000}}) {
    std::vector<float> a(n_heads * H);
    for (auto& v : a) v = d(rng);
    std::vector<float> b = a, cs(H);
    rope(a.data(), n_heads, H, pos, inv.data());
    rope_angles(pos, inv.data(), H, cs.data());
    rope_rotate(b.data(), n_heads, H, cs.data());
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "pos " << pos;
  }
}

}  // namespace elementwise_test
}  // namespace tessera::kernels
