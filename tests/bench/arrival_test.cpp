#include "tessera/bench/arrival.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera::bench {
namespace arrival_test {

struct Moments {
  double mean = 0, cv = 0;
};

Moments gap_moments(const ArrivalProcess& p, int n, uint64_t seed) {
  const std::vector<double> t = draw_arrival_times_s(p, n + 1, seed);
  double sum = 0, sq = 0;
  for (int i = 1; i <= n; ++i) {
    const double g = t[i] - t[i - 1];
    EXPECT_GE(g, 0.0);
    sum += g;
    sq += g * g;
  }
  Moments m;
  m.mean = sum / n;
  m.cv = std::sqrt(sq / n - m.mean * m.mean) / m.mean;
  return m;
}

TEST(Arrival, PoissonMeanAndCvMatchRequested) {
  const Moments m = gap_moments({ArrivalKind::kPoisson, 50.0, 1.0}, 200000, 7);
  EXPECT_NEAR(m.mean, 1.0 / 50.0, 0.01 / 50.0);  // within 1%
  EXPECT_NEAR(m.cv, 1.0, 0.015);                   // exponential gaps: CV 1
}

TEST(Arrival, GammaMeanAndCvMatchRequestedForEveryBurstiness) {
  for (double b : {0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 16.0}) {
    SCOPED_TRACE(b);
    const Moments m = gap_moments({ArrivalKind::kGamma, 10.0, b}, 200000, 11);
    const double cv = 1.0 / std::sqrt(b);
    EXPECT_NEAR(m.mean, 0.1, 0.1 * (b < 0.5 ? 0.03 : 0.01));
    EXPECT_NEAR(m.cv, cv, cv * (b < 0.5 ? 0.05 : 0.02));
  }
}

TEST(Arrival, ConstantAndInfiniteRate) {
  const auto t = draw_arrival_times_s({ArrivalKind::kConstant, 4.0, 1.0}, 5, 1);
  ASSERT_EQ(t.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(t[i], 0.25 * i);
  const auto all = draw_arrival_times_s(
      {ArrivalKind::kPoisson, std::numeric_limits<double>::infinity(), 1.0}, 4, 1);
  for (double x : all) EXPECT_EQ(x, 0.0);
}

TEST(Arrival, SameSeedSameScheduleDifferentSeedDifferent) {
  const ArrivalProcess p{ArrivalKind::kGamma, 3.0, 0.5};
  EXPECT_EQ(draw_arrival_times_s(p, 100, 42), draw_arrival_times_s(p, 100, 42));
  EXPECT_NE(draw_arrival_times_s(p, 100, 42), draw_arrival_times_s(p, 100, 43));
}

TEST(Arrival, ValidationAndParsing) {
  EXPECT_FALSE(validate(ArrivalProcess{ArrivalKind::kPoisson, 0.0, 1.0}).is_ok());
  EXPECT_FALSE(validate(ArrivalProcess{ArrivalKind::kGamma, 1.0, 0.0}).is_ok());
  EXPECT_TRUE(validate(ArrivalProcess{ArrivalKind::kGamma, 1.0, 0.3}).is_ok());
  EXPECT_EQ(*parse_arrival_kind("gamma"), ArrivalKind::kGamma);
  EXPECT_FALSE(parse_arrival_kind("weibull").is_ok());
}

}  // namespace arrival_test
}  // namespace tessera::bench
