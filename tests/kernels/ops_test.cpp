// The dense operators against plain double-precision formulas.
#include "tessera/kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace ops_test {

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

TEST(Ops, RopeNeoxRotatesHalves) {
  std::vector<float> x = {1, 0, 0, 1, 2, 3, 4, 5};  // 2 heads of 4: pairs (x0, x2), (x1, x3)
  const std::vector<float> inv = {0.5f, 0.25f};
  std::vector<float> cs(4);
  rope_angles(3, inv.data(), 4, cs.data());
  rope_rotate_neox(x.data(), 2, 4, cs.data());
  EXPECT_NEAR(x[0], std::cos(1.5), 1e-6);
  EXPECT_NEAR(x[2], std::sin(1.5), 1e-6);
  EXPECT_NEAR(x[1], -std::sin(0.75), 1e-6);
  EXPECT_NEAR(x[3], std::cos(0.75), 1e-6);
  EXPECT_NEAR(x[4], 2 * std::cos(1.5) - 4 * std::sin(1.5), 1e-5);
  EXPECT_NEAR(x[6], 2 * std::sin(1.5) + 4 * std::cos(1.5), 1e-5);
  EXPECT_NEAR(x[7], 3 * std::sin(0.75) + 5 * std::cos(0.75), 1e-5);
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

// matmul cuts the work into tiles of rows x tokens (sized from the row length); every output must
// still be exactly the vec_dot of its row and token, for shapes that end mid-tile in both
// directions, with and without a pool, for the scalar and the active tables.
TEST(Ops, MatmulTilingGivesEachOutputItsVecDot) {
  struct Case {
    DType dtype;
    int64_t n_rows, n_cols, n_tokens;
  };
  const Case cases[] = {
      {DType::kF32, 37, 5632, 25},   // one row per tile, 11 tokens per tile
      {DType::kQ8_0, 37, 5632, 50},  // two rows per tile, 43 tokens per tile
      {DType::kQ4_0, 300, 256, 5},   // 113 rows per tile
      {DType::kF16, 1, 96, 1},       // a single row and token
  };
  std::mt19937 rng(9);
  std::normal_distribution<float> d;
  ThreadPool pool(3);
  for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
    for (const Case& c : cases) {
      const DTypeKernels& k = kernels_for(*table, c.dtype);
      std::vector<float> wf(static_cast<size_t>(c.n_rows * c.n_cols));
      std::vector<float> x(static_cast<size_t>(c.n_tokens * c.n_cols));
      for (auto& v : wf) v = d(rng);
      for (auto& v : x) v = d(rng);
      const size_t row_bytes = dtype_row_bytes(c.dtype, c.n_cols);
      std::vector<std::byte> q(row_bytes * static_cast<size_t>(c.n_rows));
      k.from_float(wf.data(), q.data(), c.n_rows * c.n_cols);
      const size_t xq_row_bytes = dtype_row_bytes(k.vec_dot_type, c.n_cols);
      std::vector<std::byte> xq(xq_row_bytes * static_cast<size_t>(c.n_tokens));
      for (int64_t t = 0; t < c.n_tokens; ++t) {
        kernels_for(*table, k.vec_dot_type)
            .from_float(x.data() + t * c.n_cols, xq.data() + t * xq_row_bytes, c.n_cols);
      }
      const MatrixRef m{c.dtype, q.data(), c.n_rows, c.n_cols, row_bytes};
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> y(static_cast<size_t>(c.n_tokens * c.n_rows), -1.0f);
        matmul(*table, m, x.data(), c.n_tokens, y.data(), p);
        for (int64_t t = 0; t < c.n_tokens; ++t) {
          for (int64_t r = 0; r < c.n_rows; ++r) {
            // With a tile kernel, each output is that kernel's 1x1 tile (which the SIMD tests
            // hold within vec_dot's tolerance of the reference, whatever the tile shape).
            float want;
            if (k.vec_dot_tile != nullptr) {
              k.vec_dot_tile(q.data() + r * row_bytes, row_bytes, 1, xq.data() + t * xq_row_bytes,
                             xq_row_bytes, 1, &want, 1, c.n_cols);
            } else {
              want = k.vec_dot(q.data() + r * row_bytes, xq.data() + t * xq_row_bytes, c.n_cols);
            }
            ASSERT_EQ(y[t * c.n_rows + r], want) << table->isa << " " << dtype_name(c.dtype) << " t " << t
                                                  << " r " << r << (p ? " pool" : "");
          }
        }
      }
    }
  }
}

}  // namespace ops_test
}  // namespace tessera::kernels
