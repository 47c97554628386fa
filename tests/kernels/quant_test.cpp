// Quantize -> dequantize round trips stay within each format's stated error, and every kernel
// row of the active table agrees with the scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tessera/kernels/dtype.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace quant_test {

const DType kSupported[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0};

std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Stated per-element error bound for one block: |x - x'| <= bound(block max |x|).
double error_bound(DType t, double amax, double x) {
  switch (t) {
    case DType::kF32: return 0.0;
    case DType::kF16: return std::fabs(x) * 0x1p-11 + 0x1p-25;  // half an ulp (normal range)
    case DType::kBF16: return std::fabs(x) * 0x1p-8;
    // Step d = amax/127 (scale itself rounded to f16): error <= d/2 plus the scale's rounding.
    // A scale below f16's normal range (2^-14) is subnormal, with absolute precision 2^-25.
    case DType::kQ8_0: return amax / 127.0 * 0.5 + amax * 0x1p-10 + 127 * 0x1p-25;
    // Step d = amax/8 with levels -8d..7d, the extreme value mapped to -8d: error <= d/2 inside
    // the range, but values of the other sign beyond 7d clip, so up to d; plus the scale's rounding.
    case DType::kQ4_0: return amax / 8.0 + amax * 0x1p-9 + 8 * 0x1p-25;
    default: return 0.0;
  }
}

TEST(Quant, RoundTripWithinStatedError) {
  for (DType t : kSupported) {
    const auto& k = kernels_for(scalar_kernel_table(), t);
    for (float scale : {1e-3f, 1.0f, 100.0f}) {
      const size_t n = 256 * 8;
      auto x = random_floats(n, 11, scale);
      std::vector<std::byte> q(dtype_row_bytes(t, static_cast<int64_t>(n)));
      std::vector<float> y(n);
      k.from_float(x.data(), q.data(), static_cast<int64_t>(n));
      k.to_float(q.data(), y.data(), static_cast<int64_t>(n));
      for (size_t b = 0; b < n; b += 32) {
        double amax = 0;
        for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
        for (size_t i = b; i < b + 32; ++i) {
          ASSERT_LE(std::fabs(static_cast<double>(x[i]) - y[i]), error_bound(t, amax, x[i]))
              << dtype_name(t) << " scale " << scale << " i " << i;
        }
      }
    }
  }
}

TEST(Quant, ZeroBlocksStayZero) {
  for (DType t : kSupported) {
    const auto& k = kernels_for(scalar_kernel_table(), t);
    std::vector<float> x(64, 0.0f), y(64, 1.0f);
    std::vector<std::byte> q(dtype_row_bytes(t, 64));
    k.from_float(x.data(), q.data(), 64);
    k.to_float(q.data(), y.data(), 64);
    for (float v : y) EXPECT_EQ(v, 0.0f) << dtype_name(t);
  }
}

// Q4_0 layout: element j of a block is the low nibble of byte j, element j+16 the high nibble.
TEST(Quant, Q4_0LayoutMatchesGguf) {
  std::vector<std::byte> block(18, std::byte{0});
  block[0] = std::byte{0x00};
  block[1] = std::byte{0x3c};  // f16 1.0
  block[2] = std::byte{0x9A};  // element 0 = 0xA - 8 = 2, element 16 = 0x9 - 8 = 1
  std::vector<float> y(32);
  kernels_for(scalar_kernel_table(), DType::kQ4_0).to_float(block.data(), y.data(), 32);
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_EQ(y[16], 1.0f);
  EXPECT_EQ(y[1], -8.0f);
}

TEST(Quant, DotMatchesDequantizedDot) {
  for (DType t : kSupported) {
    const auto& active = kernels_for(t);
    const auto& ref = kernels_for(scalar_kernel_table(), t);
    for (int64_t n : {32, 64, 96, 4096 + 32}) {
      auto w = random_floats(static_cast<size_t>(n), 3);
      auto x = random_floats(static_cast<size_t>(n), 4);
      std::vector<std::byte> q(dtype_row_bytes(t, n));
      ref.from_float(w.data(), q.data(), n);
      std::vector<float> wd(static_cast<size_t>(n));
      ref.to_float(q.data(), wd.data(), n);
      double want = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        want += static_cast<double>(wd[i]) * x[i];
        mag += std::fabs(static_cast<double>(wd[i]) * x[i]);
      }
      EXPECT_NEAR(ref.dot(q.data(), x.data(), n), want, 1e-5 * mag) << dtype_name(t) << " n " << n;
      EXPECT_NEAR(active.dot(q.data(), x.data(), n), want, 1e-5 * mag) << dtype_name(t) << " n " << n;
    }
  }
}

TEST(DType, TableIsConsistent) {
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_0, 64), 36u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0, 32), 34u);
  EXPECT_EQ(dtype_row_bytes(DType::kF16, 3), 6u);
  EXPECT_EQ(dtype_from_name("Q8_0"), DType::kQ8_0);
  EXPECT_EQ(dtype_from_name("q4_k"), DType::kQ4_K);
  EXPECT_FALSE(dtype_from_name("q9_9").has_value());
  EXPECT_FALSE(dtype_info(31u).has_value());
  EXPECT_FALSE(dtype_info(DType::kIQ2_XXS).supported);
}

}  // namespace quant_test
}  // namespace tessera::kernels
