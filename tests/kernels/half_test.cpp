// f16 and bf16 conversions against definitions computed in double precision.
#include "tessera/kernels/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera::kernels {
namespace half_test {

double half_value(uint16_t h) {  // from the IEEE 754 binary16 definition
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return s * std::ldexp(m, -24);
  if (e == 31) return m ? NAN : s * INFINITY;
  return s * std::ldexp(1024 + m, e - 25);
}

TEST(Half, EveryF16DecodesExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = half_value(static_cast<uint16_t>(h));
    const float got = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << "bits " << h;
    }
  }
}

TEST(Half, EveryF16RoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << "bits " << h;
  }
}

// Encoding rounds to the nearest representable half, ties to even.
TEST(Half, EncodingRoundsToNearestEven) {
  uint64_t state = 1;
  for (int i = 0; i < 200000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t bits = static_cast<uint32_t>(state >> 32);
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    const uint16_t h = f32_to_f16(f);
    const double got = half_value(h);
    if (std::fabs(f) >= 65520.0f) {
      EXPECT_TRUE(std::isinf(got)) << f;
      continue;
    }
    // No other half is strictly closer.
    const double err = std::fabs(got - f);
    const uint16_t up = static_cast<uint16_t>(h + 1), down = static_cast<uint16_t>(h - 1);
    for (uint16_t n : {up, down}) {
      const double v = half_value(n);
      if (std::isnan(v) || std::isinf(v) || ((n ^ h) & 0x8000)) continue;
      EXPECT_LE(err, std::fabs(v - f)) << f;
    }
  }
  EXPECT_EQ(f32_to_f16(0.0f), 0);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
}

TEST(BFloat16, RoundTripAndRounding) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), h);
  }
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), f32_to_bf16(1.0f));  // tie goes to even
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
}

}  // namespace half_test
}  // namespace tessera::kernels
