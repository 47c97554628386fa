// The batching rule on its own, by hand: the running cap, admission against the KV pool with
// its growth reserve and the lone-request exception, and the composition of one step's rows.
#include "tessera/engine/batch_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::engine {
namespace batch_policy_test {

std::vector<BatchRow> rows(std::vector<int64_t> pending, int64_t budget, int64_t* left = nullptr) {
  return compose_rows(pending, budget, left);
}

TEST(BatchPolicy, TheTokenBudgetCapsTheRunningSet) {
  EXPECT_EQ(running_cap({256, 512}), 256);
  EXPECT_EQ(running_cap({32, 16}), 16);
}

TEST(BatchPolicy, AdmitsWhatFitsPastClaimsAndReserveAndALoneRequestAlways) {
  Admission a;
  a.cap = 3;
  a.kv_available = 10;
  a.kv_reserve_per_running = 1;
  EXPECT_TRUE(a.fits(50));  // none running: it runs alone
  a.take(4);
  EXPECT_TRUE(a.fits(5));  // 4 + 5 + 1 reserve
  EXPECT_FALSE(a.fits(6));
  a.take(5);
  EXPECT_TRUE(a.has_room());
  EXPECT_FALSE(a.fits(0));  // 9 claimed + 2 reserved > 10
  a.take(0);
  EXPECT_FALSE(a.has_room());
}

TEST(BatchPolicy, DecodeRowsFirstThenChunksInAdmissionOrder) {
  int64_t left = -1;
  // 0 prefilling 150, 1 decoding, 2 prefilling 30, 3 with one prompt token left: budget 100.
  EXPECT_EQ(rows({150, 1, 30, 1}, 100, &left),
            (std::vector<BatchRow>{{1, 1}, {3, 1}, {0, 98}}));
  EXPECT_EQ(left, 0);
  EXPECT_EQ(rows({20, 1, 30, 0}, 100, &left),
            (std::vector<BatchRow>{{1, 1}, {0, 20}, {2, 30}}));
  EXPECT_EQ(left, 49);
  // Decode rows past the budget get none.
  EXPECT_EQ(rows({1, 1, 1}, 2), (std::vector<BatchRow>{{0, 1}, {1, 1}}));
}

}  // namespace batch_policy_test
}  // namespace tessera::engine
