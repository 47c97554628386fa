// Error-feedback quantization (model/gptq.h): the inverse Cholesky factor against its definition;
// with uncorrelated inputs (H a multiple of I) it writes the very bytes of the importance-weighted
// quantizer with uniform importance (nothing to carry); with correlated inputs it moves the
// outputs W x over those inputs less than per-column importance weighting does, for a 32-block
// and a 256-block type; bad sizes and types are refused.
#include "tessera/model/gptq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/weighted_quantize.h"

namespace tessera::model {
namespace gptq_test {

using kernels::DType;

TEST(Gptq, InverseCholeskyUpperFactorsTheInverse) {
  const int64_t n = 7;
  std::mt19937 rng(3);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> b(static_cast<size_t>(n * n)), a(static_cast<size_t>(n * n), 0.0);
  for (double& v : b) v = g(rng);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t k = 0; k < n; ++k) a[i * n + j] += b[i * n + k] * b[j * n + k];
    }
    a[i * n + i] += 0.5;
  }
  auto u = inverse_cholesky_upper(a, n);
  ASSERT_TRUE(u.is_ok()) << u.status().to_string();
  // U upper triangular with a positive diagonal, and (U^T U) A = I.
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_GT((*u)[i * n + i], 0.0);
    for (int64_t j = 0; j < i; ++j) EXPECT_EQ((*u)[i * n + j], 0.0);
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < n; ++k) {
        double inv_ik = 0.0;  // (U^T U)_ik
        for (int64_t m = 0; m < n; ++m) inv_ik += (*u)[m * n + i] * (*u)[m * n + k];
        s += inv_ik * a[k * n + j];
      }
      EXPECT_NEAR(s, i == j ? 1.0 : 0.0, 1e-9) << i << "," << j;
    }
  }
  std::vector<double> indefinite = {1.0, 2.0, 2.0, 1.0};
  EXPECT_EQ(inverse_cholesky_upper(indefinite, 2).status().code(), ErrorCode::kInvalidArgument);
}

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = g(rng);
  return w;
}

TEST(Gptq, UncorrelatedInputsRoundEachWeightToTheNearestLevelOfTheWeightedScales) {
  for (DType t : {DType::kQ4_0, DType::kQ5_0, DType::kQ8_0, DType::kQ4_1, DType::kQ5_1,
                  DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL}) {
    const int64_t rows = 5, cols = 512;
    const std::vector<float> w = random_matrix(rows, cols, 11);
    std::vector<double> h(static_cast<size_t>(cols * cols), 0.0);
    for (int64_t j = 0; j < cols; ++j) h[j * cols + j] = 3.0;
    const size_t row_bytes = kernels::dtype_row_bytes(t, cols);
    std::vector<std::byte> got(row_bytes * rows), want(row_bytes * rows);
    std::vector<float> scratch = w;
    ThreadPool pool(2);
    ASSERT_TRUE(gptq_quantize(scratch, rows, cols, h, t, got, pool).is_ok());
    const int64_t bs = kernels::dtype_info(t).block_size;
    const std::vector<float> ones(static_cast<size_t>(bs), 1.0f);
    std::vector<float> wt(static_cast<size_t>(bs));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c0 = 0; c0 < cols; c0 += bs) {
        const float* x = w.data() + r * cols + c0;
        kernels::importance_weights(x, ones.data(), bs, wt.data());
        kernels::weighted_from_float(t)(
            x, want.data() + r * row_bytes + kernels::dtype_row_bytes(t, c0), bs, wt.data());
      }
    }
    // Nothing to carry: the weighted quantizer's scales, each value at its nearest level on
    // them - never further from the weight than the weighted quantizer put it (a type without an
    // affine level grid, iq4_nl here, keeps the weighted quantizer's bytes).
    const auto& k = kernels::kernels_for(kernels::scalar_kernel_table(), t);
    std::vector<float> a(static_cast<size_t>(cols)), b(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      k.to_float(got.data() + r * row_bytes, a.data(), cols);
      k.to_float(want.data() + r * row_bytes, b.data(), cols);
      for (int64_t j = 0; j < cols; ++j) {
        const float x = w[r * cols + j];
        EXPECT_LE(std::fabs(x - a[j]), std::fabs(x - b[j]) + 1e-6f)
            << kernels::dtype_name(t) << " row " << r << " col " << j;
      }
    }
    if (t == DType::kIQ4_NL) {
      EXPECT_EQ(got, want);
    }
  }
}

// sum over tokens of ||(W - W^) x||^2 for the inputs X (n x cols).
double output_error(const std::vector<float>& w, const std::vector<std::byte>& q, DType t,
                    int64_t rows, int64_t cols, const std::vector<float>& x, int64_t n) {
  const auto& k = kernels::kernels_for(kernels::scalar_kernel_table(), t);
  const size_t row_bytes = kernels::dtype_row_bytes(t, cols);
  std::vector<float> deq(static_cast<size_t>(cols));
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    k.to_float(q.data() + r * row_bytes, deq.data(), cols);
    for (int64_t s = 0; s < n; ++s) {
      double y = 0.0;
      for (int64_t j = 0; j < cols; ++j) {
        y += (static_cast<double>(w[r * cols + j]) - deq[j]) * x[s * cols + j];
      }
      total += y * y;
    }
  }
  return total;
}

TEST(Gptq, CorrelatedInputsMoveTheOutputsLessThanPerColumnWeights) {
  for (DType t : {DType::kQ4_0, DType::kQ4_K}) {
    const int64_t rows = 16, cols = 256, n = 1500, latent = 24;
    // Inputs with a few strong shared directions (as a layer's activations have), plus noise.
    std::mt19937 rng(7);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const std::vector<float> mix = random_matrix(latent, cols, 5);
    std::vector<float> x(static_cast<size_t>(n * cols));
    for (int64_t s = 0; s < n; ++s) {
      std::vector<float> z(static_cast<size_t>(latent));
      for (float& v : z) v = g(rng);
      for (int64_t j = 0; j < cols; ++j) {
        double v = 0.1 * g(rng);
        for (int64_t l = 0; l < latent; ++l) v += z[l] * mix[l * cols + j];
        x[s * cols + j] = static_cast<float>(v);
      }
    }
    std::vector<double> h(static_cast<size_t>(cols * cols), 0.0);
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t i = 0; i < cols; ++i) {
        for (int64_t j = 0; j < cols; ++j) h[i * cols + j] += double(x[s * cols + i]) * x[s * cols + j];
      }
    }
    const std::vector<float> w = random_matrix(rows, cols, 9);
    const size_t row_bytes = kernels::dtype_row_bytes(t, cols);
    // Per-column importance: the diagonal.
    std::vector<float> imp(static_cast<size_t>(cols)), wt(static_cast<size_t>(cols));
    for (int64_t j = 0; j < cols; ++j) imp[j] = static_cast<float>(h[j * cols + j] / n);
    std::vector<std::byte> diag(row_bytes * rows);
    for (int64_t r = 0; r < rows; ++r) {
      kernels::importance_weights(w.data() + r * cols, imp.data(), cols, wt.data());
      kernels::weighted_from_float(t)(w.data() + r * cols, diag.data() + r * row_bytes, cols,
                                      wt.data());
    }
    std::vector<std::byte> fb(row_bytes * rows);
    std::vector<float> scratch = w;
    ThreadPool pool(2);
    ASSERT_TRUE(gptq_quantize(scratch, rows, cols, h, t, fb, pool).is_ok());
    const double e_diag = output_error(w, diag, t, rows, cols, x, n);
    const double e_fb = output_error(w, fb, t, rows, cols, x, n);
    EXPECT_LT(e_fb, 0.7 * e_diag) << kernels::dtype_name(t) << ": " << e_fb << " vs " << e_diag;
  }
}

TEST(Gptq, RefusesWhatDoesNotFit) {
  ThreadPool pool(1);
  std::vector<float> w(2 * 48);
  std::vector<double> h(48 * 48, 0.0);
  std::vector<std::byte> out(1024);
  EXPECT_EQ(gptq_quantize(w, 2, 48, h, DType::kQ4_0, out, pool).code(),
            ErrorCode::kInvalidArgument);  // 48 is not a multiple of 32
  std::vector<float> w2(2 * 64);
  std::vector<double> h2(64 * 63, 0.0);
  EXPECT_EQ(gptq_quantize(w2, 2, 64, h2, DType::kQ4_0, out, pool).code(),
            ErrorCode::kInvalidArgument);  // h not 64 x 64
  std::vector<double> h3(64 * 64, 0.0);
  EXPECT_EQ(gptq_quantize(w2, 2, 64, h3, DType::kF16, out, pool).code(),
            ErrorCode::kInvalidArgument);  // no weighted quantizer
  std::vector<std::byte> small(10);
  EXPECT_EQ(gptq_quantize(w2, 2, 64, h3, DType::kQ4_0, small, pool).code(),
            ErrorCode::kInvalidArgument);
  // All-zero second moments (no inputs seen): unit diagonal, coded as without feedback.
  EXPECT_TRUE(gptq_quantize(w2, 2, 64, h3, DType::kQ4_0, out, pool).is_ok());
}

}  // namespace gptq_test
}  // namespace tessera::model
