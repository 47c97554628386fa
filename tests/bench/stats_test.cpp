#include "tessera/bench/stats.h"

#include <gtest/gtest.h>

namespace tessera::bench {
namespace stats_test {

TEST(Stats, PercentilesInterpolateBetweenClosestRanks) {
  const std::vector<double> v = {15, 20, 35, 40, 50};  // unsorted input is fine too
  EXPECT_DOUBLE_EQ(percentile(v, 0), 15);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 50);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 35);
  EXPECT_DOUBLE_EQ(percentile(v, 40), 29);    // rank 1.6: 20 + 0.6 * 15
  EXPECT_DOUBLE_EQ(percentile({50, 15, 40, 20, 35}, 90), 46);  // rank 3.6: 40 + 0.6 * 10
  EXPECT_DOUBLE_EQ(percentile({7}, 99.9), 7);
}

TEST(Stats, Summary) {
  const Summary s = summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_NEAR(s.stddev, 2.138089935, 1e-9);  // sample standard deviation
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_EQ(summarize({}).n, 0u);
  EXPECT_EQ(summarize({3}).stddev, 0.0);
}

}  // namespace stats_test
}  // namespace tessera::bench
