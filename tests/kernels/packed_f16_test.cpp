// F16 repacked into groups of 16 rows (packed_f16.h): round trip, scalar reference against the
// row-major dot, SIMD bit-identical to the reference for every token count, and matmul on the
// packed copy (tail rows, pool, one token alone) against matmul on the rows.
#include "tessera/kernels/packed_f16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tessera/kernels/avx512_kernels.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/ops.h"

namespace tessera::kernels {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<float> normal(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<std::byte> f16_rows(int64_t n_rows, int64_t n_cols, uint64_t seed) {
  const auto f = normal(static_cast<size_t>(n_rows * n_cols), seed);
  std::vector<std::byte> q(static_cast<size_t>(n_rows * n_cols) * 2);
  kernels_for(scalar_kernel_table(), DType::kF16).from_float(f.data(), q.data(), n_rows * n_cols);
  return q;
}

TEST(PackedF16, GemmMatchesReferenceAndRows) {
  for (int64_t n : {1, 3, 4, 7, 64, 576, 2051}) {
    const int64_t R = 32, T = 13, stride = R + 3;
    const auto q = f16_rows(R, n, 1 + n);
    const auto x = normal(static_cast<size_t>(T * n), 2 + n);
    std::vector<std::byte> p(q.size());
    pack_f16x16(q.data(), n * 2, R / 16, n, p.data());
    std::vector<float> want(n), got(n);
    for (int64_t r = 0; r < R; ++r) {
      kernels_for(scalar_kernel_table(), DType::kF16).to_float(q.data() + r * n * 2, want.data(), n);
      f16x16_row_to_float(p.data() + (r / 16) * f16x16_group_bytes(n), static_cast<int>(r % 16), n, got.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(got[i]), bits_of(want[i]));
    }
    std::vector<float> ref(static_cast<size_t>(T * stride), -7.0f);
    scalar::f16x16_f32_gemm(p.data(), R / 16, x.data(), n * 4, nullptr, T, ref.data(), stride, n);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t r = 0; r < R; ++r) {
        const float dot = kernels_for(scalar_kernel_table(), DType::kF16).dot(q.data() + r * n * 2, x.data() + t * n, n);
        EXPECT_NEAR(ref[t * stride + r], dot, 1e-5 * (1 + std::fabs(dot)) * std::sqrt(static_cast<double>(n)));
      }
    }
    if (!cpu_features().has_avx512_set()) continue;
    for (int64_t nt = 1; nt <= T; ++nt) {
      std::vector<float> simd(static_cast<size_t>(T * stride), -7.0f);
      avx512::f16x16_f32_gemm(p.data(), R / 16, x.data(), n * 4, nullptr, nt, simd.data(), stride, n);
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t r = 0; r < stride; ++r) {
          const float g = simd[t * stride + r];
          if (t < nt && r < R) {
            ASSERT_EQ(bits_of(g), bits_of(ref[t * stride + r])) << "n " << n << " tokens " << nt;
          } else {
            ASSERT_EQ(g, -7.0f) << "wrote outside its outputs: n " << n << " tokens " << nt;
          }
        }
      }
    }
  }
}

TEST(PackedF16, MatmulOnPackedMatrix) {
  ThreadPool pool(3);
  for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
    for (int64_t R : {16, 37}) {
      const int64_t n = 96, T = 9;
      const auto q = f16_rows(R, n, 50 + R);
      const MatrixRef m{DType::kF16, q.data(), R, n, static_cast<size_t>(n * 2)};
      ASSERT_EQ(preferred_layout(scalar_kernel_table(), m), MatrixLayout::kF16x16);
      std::vector<std::byte> p(matrix_bytes(m, MatrixLayout::kF16x16));
      EXPECT_EQ(p.size(), q.size());
      const MatrixRef packed = pack_matrix(m, MatrixLayout::kF16x16, p.data());
      const auto x = normal(static_cast<size_t>(T * n), 9);
      std::vector<float> y_rows(static_cast<size_t>(T * R)), y_packed(y_rows.size()), y_pool(y_rows.size());
      matmul(*table, m, x.data(), T, y_rows.data(), nullptr);
      matmul(*table, packed, x.data(), T, y_packed.data(), nullptr);
      matmul(*table, packed, x.data(), T, y_pool.data(), &pool);
      for (size_t i = 0; i < y_rows.size(); ++i) {
        EXPECT_EQ(bits_of(y_pool[i]), bits_of(y_packed[i]));
        EXPECT_NEAR(y_packed[i], y_rows[i], 1e-4 * (1 + std::fabs(y_rows[i])));
      }
      std::vector<float> y_one(static_cast<size_t>(R));
      matmul(*table, packed, x.data() + 4 * n, 1, y_one.data(), &pool);
      for (int64_t r = 0; r < R; ++r) EXPECT_EQ(bits_of(y_one[r]), bits_of(y_packed[4 * R + r]));
      std::vector<float> want(n), got(n);
      for (int64_t r = 0; r < R; ++r) {
        dequantize_row(m, r, want.data());
        dequantize_row(packed, r, got.data());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(got[i]), bits_of(want[i]));
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels
