// Q4_0 repacked into groups of 16 rows (packed_q4_0.h): the layout round-trips, the scalar
// reference agrees with the GGUF-layout vec_dot, every SIMD kernel agrees with the reference bit
// for bit whatever the number of tokens, and matmul on a packed matrix (tail rows included)
// matches matmul on the original.
#include "tessera/kernels/packed_q4_0.h"

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

// n_rows GGUF Q4_0 rows: quantized from random floats, the last row random bytes (every nibble).
std::vector<std::byte> q4_0_rows(int64_t n_rows, int64_t n_cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> f(static_cast<size_t>(n_rows * n_cols));
  for (auto& v : f) v = d(rng);
  std::vector<std::byte> q(dtype_row_bytes(DType::kQ4_0, n_rows * n_cols));
  kernels_for(scalar_kernel_table(), DType::kQ4_0).from_float(f.data(), q.data(), n_rows * n_cols);
  const size_t rb = dtype_row_bytes(DType::kQ4_0, n_cols);
  for (size_t off = (n_rows - 1) * rb; off < q.size(); off += 18) {
    for (size_t j = 2; j < 18; ++j) q[off + j] = static_cast<std::byte>(rng());
  }
  return q;
}

// n_tokens Q8_0 activation rows, the last one with -128 quants present.
std::vector<std::byte> q8_0_tokens(int64_t n_tokens, int64_t n_cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> f(static_cast<size_t>(n_tokens * n_cols));
  for (auto& v : f) v = d(rng);
  std::vector<std::byte> x(dtype_row_bytes(DType::kQ8_0, n_tokens * n_cols));
  kernels_for(scalar_kernel_table(), DType::kQ8_0).from_float(f.data(), x.data(), n_tokens * n_cols);
  const size_t rb = dtype_row_bytes(DType::kQ8_0, n_cols);
  for (size_t off = (n_tokens - 1) * rb; off < x.size(); off += 34) x[off + 2 + rng() % 32] = std::byte{0x80};
  return x;
}

TEST(PackedQ4_0, RowsRoundTrip) {
  for (int64_t n : {32, 96, 2048}) {
    const int64_t R = 32;
    const auto q = q4_0_rows(R, n, 1 + n);
    const size_t rb = dtype_row_bytes(DType::kQ4_0, n);
    std::vector<std::byte> p(q.size());
    pack_q4_0x16(q.data(), rb, R / 16, n, p.data());
    std::vector<float> want(n), got(n);
    for (int64_t r = 0; r < R; ++r) {
      kernels_for(scalar_kernel_table(), DType::kQ4_0).to_float(q.data() + r * rb, want.data(), n);
      q4_0x16_row_to_float(p.data() + (r / 16) * q4_0x16_group_bytes(n), static_cast<int>(r % 16), n, got.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(got[i]), bits_of(want[i])) << "row " << r << " col " << i;
    }
  }
}

TEST(PackedQ4_0, ScalarGemmMatchesVecDot) {
  for (int64_t n : {32, 64, 160, 5632}) {
    const int64_t R = 32, T = 3;
    const auto q = q4_0_rows(R, n, 10 + n);
    const auto x = q8_0_tokens(T, n, 20 + n);
    const size_t rb = dtype_row_bytes(DType::kQ4_0, n), xrb = dtype_row_bytes(DType::kQ8_0, n);
    std::vector<std::byte> p(q.size());
    pack_q4_0x16(q.data(), rb, R / 16, n, p.data());
    std::vector<int32_t> bias(static_cast<size_t>(T * n / 32 * 2));
    q8_0_block_terms(x.data(), xrb, T, n, bias.data());
    std::vector<float> y(static_cast<size_t>(T * R));
    scalar::q4_0x16_q8_0_gemm(p.data(), R / 16, x.data(), xrb, bias.data(), T, y.data(), R, n);
    const DTypeKernels& k = kernels_for(scalar_kernel_table(), DType::kQ4_0);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t r = 0; r < R; ++r) {
        const float want = k.vec_dot(q.data() + r * rb, x.data() + t * xrb, n);
        EXPECT_NEAR(y[t * R + r], want, 1e-4 * (1 + std::fabs(want)) * std::sqrt(static_cast<double>(n)))
            << "n " << n << " row " << r << " token " << t;
      }
    }
  }
}

// Every SIMD kernel this CPU runs: bit-identical to the reference, for token counts covering
// whole 8-token tiles, every remainder, and a single token (decode), writing only its outputs.
TEST(PackedQ4_0, SimdGemmIsBitIdenticalToReference) {
  if (!cpu_features().has_avx512_set()) {
    GTEST_SKIP() << "CPU lacks the avx512 kernel set (has: " << cpu_flags_string() << ")";
  }
  for (int64_t n : {32, 64, 96, 5632}) {
    const int64_t R = 48, T = 19, stride = R + 5;
    const auto q = q4_0_rows(R, n, 30 + n);
    const auto x = q8_0_tokens(T, n, 40 + n);
    const size_t rb = dtype_row_bytes(DType::kQ4_0, n), xrb = dtype_row_bytes(DType::kQ8_0, n);
    std::vector<std::byte> p(q.size());
    pack_q4_0x16(q.data(), rb, R / 16, n, p.data());
    std::vector<int32_t> bias(static_cast<size_t>(T * n / 32 * 2));
    q8_0_block_terms(x.data(), xrb, T, n, bias.data());
    std::vector<float> want(static_cast<size_t>(T * stride), -7.0f);
    scalar::q4_0x16_q8_0_gemm(p.data(), R / 16, x.data(), xrb, bias.data(), T, want.data(), stride, n);
    for (int64_t nt = 1; nt <= T; ++nt) {
      std::vector<float> got(static_cast<size_t>(T * stride), -7.0f);
      avx512::q4_0x16_q8_0_gemm(p.data(), R / 16, x.data(), xrb, bias.data(), nt, got.data(), stride, n);
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

// matmul on the packed copy: the same outputs as the packed reference row by row (tail rows as
// GGUF vec_dots), with and without a pool, and dequantize_row reads every row back.
TEST(PackedQ4_0, MatmulOnPackedMatrix) {
  ThreadPool pool(3);
  for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
    for (int64_t R : {16, 37, 64}) {
      const int64_t n = 256, T = 11;
      const auto q = q4_0_rows(R, n, 50 + R);
      const MatrixRef m{DType::kQ4_0, q.data(), R, n, dtype_row_bytes(DType::kQ4_0, n)};
      std::vector<std::byte> p(m.bytes());
      const MatrixRef packed = pack_matrix(m, MatrixLayout::kQ4_0x16, p.data());
      EXPECT_EQ(preferred_layout(scalar_kernel_table(), m), MatrixLayout::kQ4_0x16);
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
      // One token alone gets the same bits as inside the batch (decode == prefill).
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

// Several matrices on one input in one parallel region give what separate matmuls give, bit for
// bit, packed (tails included) or not (the fallback), for one token and several.
TEST(PackedQ4_0, SharedInputMatmulIsSeparateMatmuls) {
  ThreadPool pool(3);
  const int64_t n = 128;
  const int64_t rows[] = {48, 21, 16};
  std::vector<std::vector<std::byte>> data, packed;
  std::vector<MatrixRef> plain, pk;
  for (int i = 0; i < 3; ++i) {
    data.push_back(q4_0_rows(rows[i], n, 90 + i));
    plain.push_back(MatrixRef{DType::kQ4_0, data.back().data(), rows[i], n, dtype_row_bytes(DType::kQ4_0, n)});
    packed.emplace_back(matrix_bytes(plain.back(), MatrixLayout::kQ4_0x16));
    pk.push_back(pack_matrix(plain.back(), MatrixLayout::kQ4_0x16, packed.back().data()));
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  for (int64_t T : {1, 5}) {
    std::vector<float> x(static_cast<size_t>(T * n));
    for (auto& v : x) v = d(rng);
    for (const auto* set : {&plain, &pk}) {
      std::vector<std::vector<float>> sep(3), together(3);
      std::vector<float*> outs;
      for (int i = 0; i < 3; ++i) {
        sep[i].resize(static_cast<size_t>(T * rows[i]));
        together[i].assign(static_cast<size_t>(T * rows[i]), -7.0f);
        matmul((*set)[i], x.data(), T, sep[i].data(), &pool);
        outs.push_back(together[i].data());
      }
      matmul_shared_input(*set, x.data(), T, outs, &pool);
      for (int i = 0; i < 3; ++i) {
        for (size_t j = 0; j < sep[i].size(); ++j) ASSERT_EQ(bits_of(together[i][j]), bits_of(sep[i][j])) << i << " " << j;
      }
    }
  }
}

TEST(PackedQ4_0, PreferredLayout) {
  const MatrixRef small{DType::kQ4_0, nullptr, 15, 64, 36};
  EXPECT_EQ(preferred_layout(scalar_kernel_table(), small), MatrixLayout::kRows);
  const MatrixRef q8{DType::kQ8_0, nullptr, 64, 64, 68};
  EXPECT_EQ(preferred_layout(scalar_kernel_table(), q8), MatrixLayout::kQ8_0x16);
  const MatrixRef f16{DType::kF16, nullptr, 64, 64, 128};
  EXPECT_EQ(preferred_layout(scalar_kernel_table(), f16), MatrixLayout::kF16x16);
  const MatrixRef f32{DType::kF32, nullptr, 64, 64, 256};
  EXPECT_EQ(preferred_layout(scalar_kernel_table(), f32), MatrixLayout::kRows);
  KernelTable no_kernel = scalar_kernel_table();
  no_kernel.q4_0x16_gemm = nullptr;
  const MatrixRef big{DType::kQ4_0, nullptr, 64, 64, 36};
  EXPECT_EQ(preferred_layout(no_kernel, big), MatrixLayout::kRows);
  EXPECT_EQ(preferred_layout(scalar_kernel_table(), big), MatrixLayout::kQ4_0x16);
}

}  // namespace
}  // namespace tessera::kernels
