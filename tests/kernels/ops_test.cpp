// The dense operators against plain double-precision formulas.
#include "tessera/kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

TEST(Ops, RmsNorm) {
  std::vector<float> x = {1, -2, 3, -4}, w = {1, 2, 0.5f, 1}, out(4);
  rmsnorm(x.data(), w.data(), 4, 1e-5f, out.data());
  const double s = 1.0 / std::sqrt((1 + 4 + 9 + 16) / 4.0 + 1e-5);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[i], x[i] * s * w[i], 1e-6);
}

TEST(Ops, SoftmaxIsStableForLargeValues) {
  std::vector<float> x = {1000, 1001, 1002};
  softmax(x.data(), 3);
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  EXPECT_NEAR(x[0], 1 / z, 1e-6);
  EXPECT_NEAR(x[2], std::exp(2.0) / z, 1e-6);
}

TEST(Ops, RopeRotatesAdjacentPairs) {
  std::vector<float> x = {1, 0, 0, 1, 2, 3, 4, 5};  // 2 heads of 4
  const std::vector<float> inv = {0.5f, 0.25f};
  rope(x.data(), 2, 4, 3, inv.data());
  EXPECT_NEAR(x[0], std::cos(1.5), 1e-6);
  EXPECT_NEAR(x[1], std::sin(1.5), 1e-6);
  EXPECT_NEAR(x[2], -std::sin(0.75), 1e-6);
  EXPECT_NEAR(x[3], std::cos(0.75), 1e-6);
  EXPECT_NEAR(x[4], 2 * std::cos(1.5) - 3 * std::sin(1.5), 1e-5);
}

TEST(Ops, SiluMul) {
  std::vector<float> g = {-1, 0, 2}, u = {2, 3, 0.5f};
  silu_mul(g.data(), u.data(), 3);
  EXPECT_NEAR(g[0], -1 / (1 + std::exp(1.0)) * 2, 1e-6);
  EXPECT_EQ(g[1], 0.0f);
  EXPECT_NEAR(g[2], 2 / (1 + std::exp(-2.0)) * 0.5, 1e-6);
}

TEST(Ops, MatmulMatchesDoubleForEveryDtypeAndThreading) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d;
  const int64_t R = 37, C = 96, T = 3;  // odd row count, several tokens
  std::vector<float> wf(R * C), x(T * C);
  for (auto& v : wf) v = d(rng);
  for (auto& v : x) v = d(rng);
  ThreadPool pool(3);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    const auto& k = kernels_for(t);
    std::vector<std::byte> q(dtype_row_bytes(t, R * C));
    k.from_float(wf.data(), q.data(), R * C);
    std::vector<float> deq(R * C);
    k.to_float(q.data(), deq.data(), R * C);
    // The activations as the kernel sees them: converted to the vec_dot_type and back.
    std::vector<float> xs = x;
    if (k.vec_dot_type != DType::kF32) {
      const auto& kx = kernels_for(k.vec_dot_type);
      std::vector<std::byte> xq(dtype_row_bytes(k.vec_dot_type, T * C));
      kx.from_float(x.data(), xq.data(), T * C);
      kx.to_float(xq.data(), xs.data(), T * C);
    }
    MatrixRef m{t, q.data(), R, C, dtype_row_bytes(t, C)};
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<float> y(T * R);
      matmul(m, x.data(), T, y.data(), p);
      for (int64_t tt = 0; tt < T; ++tt)
        for (int64_t r = 0; r < R; ++r) {
          double want = 0;
          for (int64_t c = 0; c < C; ++c) want += static_cast<double>(deq[r * C + c]) * xs[tt * C + c];
          EXPECT_NEAR(y[tt * R + r], want, 1e-3) << dtype_name(t);
        }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels
