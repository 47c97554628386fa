// Q4_K repacked into groups of 16 rows (packed_q4_k.h): the layout round-trips, the scalar
// reference agrees with the GGUF-layout vec_dot, the SIMD kernel agrees with the reference bit
// for bit whatever the number of tokens, and matmul on a packed matrix matches the original.
#include "tessera/kernels/packed_q4_k.h"

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

// n_rows GGUF Q4_K rows quantized from random floats; the last row's packed scales and quants
// are random bytes (every 6-bit scale and min, every nibble).
std::vector<std::byte> q4_k_rows(int64_t n_rows, int64_t n_cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> f(static_cast<size_t>(n_rows * n_cols));
  for (auto& v : f) v = d(rng);
  std::vector<std::byte> q(dtype_row_bytes(DType::kQ4_K, n_rows * n_cols));
  kernels_for(scalar_kernel_table(), DType::kQ4_K).from_float(f.data(), q.data(), n_rows * n_cols);
  const size_t rb = dtype_row_bytes(DType::kQ4_K, n_cols);
  for (size_t off = (n_rows - 1) * rb; off < q.size(); off += 144) {
    for (size_t j = 4; j < 144; ++j) q[off + j] = static_cast<std::byte>(rng());
  }
  return q;
}

std::vector<std::byte> q8_k_tokens(int64_t n_tokens, int64_t n_cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> f(static_cast<size_t>(n_tokens * n_cols));
  for (auto& v : f) v = d(rng);
  std::vector<std::byte> x(dtype_row_bytes(DType::kQ8_K, n_tokens * n_cols));
  kernels_for(scalar_kernel_table(), DType::kQ8_K).from_float(f.data(), x.data(), n_tokens * n_cols);
  return x;
}

TEST(PackedQ4_K, RowsRoundTrip) {
  for (int64_t n : {256, 2048}) {
    const int64_t R = 32;
    const auto q = q4_k_rows(R, n, 1 + n);
    const size_t rb = dtype_row_bytes(DType::kQ4_K, n);
    std::vector<std::byte> p(R / 16 * q4_kx16_group_bytes(n));
    pack_q4_kx16(q.data(), rb, R / 16, n, p.data());
    std::vector<float> want(n), got(n);
    for (int64_t r = 0; r < R; ++r) {
      kernels_for(scalar_kernel_table(), DType::kQ4_K).to_float(q.data() + r * rb, want.data(), n);
      q4_kx16_row_to_float(p.data() + (r / 16) * q4_kx16_group_bytes(n), static_cast<int>(r % 16), n, got.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(got[i]), bits_of(want[i])) << "row " << r << " col " << i;
    }
  }
}

TEST(PackedQ4_K, ScalarGemmMatchesVecDot) {
  for (int64_t n : {256, 512, 5632}) {
    const int64_t R = 32, T = 3;
    const auto q = q4_k_rows(R, n, 10 + n);
    const auto x = q8_k_tokens(T, n, 20 + n);
    const size_t rb = dtype_row_bytes(DType::kQ4_K, n), xrb = dtype_row_bytes(DType::kQ8_K, n);
    std::vector<std::byte> p(R / 16 * q4_kx16_group_bytes(n));
    pack_q4_kx16(q.data(), rb, R / 16, n, p.data());
    std::vector<int32_t> pairs(static_cast<size_t>(T * n / 256 * 4));
    q8_k_min_pairs(x.data(), xrb, T, n, pairs.data());
    std::vector<float> y(static_cast<size_t>(T * R));
    scalar::q4_kx16_q8_k_gemm(p.data(), R / 16, x.data(), xrb, pairs.data(), T, y.data(), R, n);
    const DTypeKernels& k = kernels_for(scalar_kernel_table(), DType::kQ4_K);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t r = 0; r < R; ++r) {
        const float want = k.vec_dot(q.data() + r * rb, x.data() + t * xrb, n);
        EXPECT_NEAR(y[t * R + r], want, 1e-5 * (1 + std::fabs(want)) * std::sqrt(static_cast<double>(n)))
            << "n " << n << " row " << r << " token " << t;
      }
    }
  }
}

TEST(PackedQ4_K, SimdGemmIsBitIdenticalToReference) {
  if (!cpu_features().has_avx512_set()) {
    GTEST_SKIP() << "CPU lacks the avx512 kernel set (has: " << cpu_flags_string() << ")";
  }
  for (int64_t n : {256, 768, 5632}) {
    const int64_t R = 48, T = 19, stride = R + 5;
    const auto q = q4_k_rows(R, n, 30 + n);
    const auto x = q8_k_tokens(T, n, 40 + n);
    const size_t rb = dtype_row_bytes(DType::kQ4_K, n), xrb = dtype_row_bytes(DType::kQ8_K, n);
    std::vector<std::byte> p(R / 16 * q4_kx16_group_bytes(n));
    pack_q4_kx16(q.data(), rb, R / 16, n, p.data());
    std::vector<int32_t> pairs(static_cast<size_t>(T * n / 256 * 4));
    q8_k_min_pairs(x.data(), xrb, T, n, pairs.data());
    std::vector<float> want(static_cast<size_t>(T * stride), -7.0f);
    scalar::q4_kx16_q8_k_gemm(p.data(), R / 16, x.data(), xrb, pairs.data(), T, want.data(), stride, n);
    for (int64_t nt = 1; nt <= T; ++nt) {
      std::vector<float> got(static_cast<size_t>(T * stride), -7.0f);
      avx512::q4_kx16_q8_k_gemm(p.data(), R / 16, x.data(), xrb, pairs.data(), nt, got.data(), stride, n);
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t r = 0; r < stride; ++r) {
          const float g = got[t * stride + r];
          if (t < nt && r < R) {
            ASSERT_EQ(bits_of(g), bits_of(want[t * stride + r])) << "n " << n << " tokens " << nt << " t " << t << " r " << r;
          } else {
            ASSERT_EQ(g, -7.0f) << "wrote outside its outputs: n " << n << " tokens " << nt;
          }
        }
      }
    }
  }
}

TEST(PackedQ4_K, MatmulOnPackedMatrix) {
  ThreadPool pool(3);
  for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
    for (int64_t R : {16, 37}) {
      const int64_t n = 512, T = 11;
      const auto q = q4_k_rows(R, n, 50 + R);
      const MatrixRef m{DType::kQ4_K, q.data(), R, n, dtype_row_bytes(DType::kQ4_K, n)};
      std::vector<std::byte> p(R / 16 * q4_kx16_group_bytes(n) + (R % 16) * m.row_bytes);
      ASSERT_EQ(preferred_layout(scalar_kernel_table(), m), MatrixLayout::kQ4_Kx16);
      const MatrixRef packed = pack_matrix(m, MatrixLayout::kQ4_Kx16, p.data());
      EXPECT_EQ(packed.bytes(), p.size());
      std::mt19937 rng(7);
      std::normal_distribution<float> d;
      std::vector<float> x(static_cast<size_t>(T * n));
      for (auto& v : x) v = d(rng);
      std::vector<float> y_rows(static_cast<size_t>(T * R)), y_packed(y_rows.size()), y_pool(y_rows.size());
      matmul(*table, m, x.data(), T, y_rows.data(), nullptr);
      matmul(*table, packed, x.data(), T, y_packed.data(), nullptr);
      matmul(*table, packed, x.data(), T, y_pool.data(), &pool);
      for (size_t i = 0; i < y_rows.size(); ++i) {
        EXPECT_EQ(bits_of(y_pool[i]), bits_of(y_packed[i]));
        EXPECT_NEAR(y_packed[i], y_rows[i], 1e-3 * (1 + std::fabs(y_rows[i]))) << "R " << R << " i " << i;
      }
      std::vector<float> y_one(static_cast<size_t>(R));
      matmul(*table, packed, x.data() + 5 * n, 1, y_one.data(), &pool);
      for (int64_t r = 0; r < R; ++r) EXPECT_EQ(bits_of(y_one[r]), bits_of(y_packed[5 * R + r]));
      std::vector<float> want(n), got(n);
      for (int64_t r = 0; r < R; ++r) {
        dequantize_row(m, r, want.data());
        dequantize_row(packed, r, got.data());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(got[i]), bits_of(want[i])) << "R " << R << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels
