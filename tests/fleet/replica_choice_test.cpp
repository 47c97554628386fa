#include "tessera/fleet/replica_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::fleet {
namespace replica_choice_test {

using S = ModelState;

int32_t pick(std::vector<ReplicaSlotView> v, int32_t cap, ReplicaSpread s = ReplicaSpread::kSpread) {
  return choose_replica(v, cap, s);
}

TEST(ReplicaChoice, ActiveBelowCapFirstSpreadOrPack) {
  EXPECT_EQ(pick({{S::kActive, 2}, {S::kActive, 1}, {S::kActive, 3}}, 4), 1);
  EXPECT_EQ(pick({{S::kActive, 2}, {S::kActive, 1}, {S::kActive, 3}}, 4, ReplicaSpread::kPack), 2);
  EXPECT_EQ(pick({{S::kActive, 4}, {S::kActive, 3}}, 4), 1);  // the full one is skipped
}

TEST(ReplicaChoice, AffinityBeatsLoadWithinTheSlack) {
  EXPECT_EQ(pick({{S::kActive, 0, 0}, {S::kActive, 2, 5}, {S::kActive, 1, 3}}, 4), 1);
  // Beyond the slack (2 more than the least loaded), affinity does not count: a prefix every
  // request shares must not pile them all on one replica.
  EXPECT_EQ(pick({{S::kActive, 0, 0}, {S::kActive, 3, 5}, {S::kActive, 2, 3}}, 8), 2);
  EXPECT_EQ(choose_replica(std::vector<ReplicaSlotView>{{S::kActive, 0, 0}, {S::kActive, 3, 5}}, 8,
                           ReplicaSpread::kSpread, 3),
            1);
  // At the cap, affinity does not overload a replica: another takes it.
  EXPECT_EQ(pick({{S::kActive, 0, 0}, {S::kActive, 4, 5}}, 4), 0);
}

TEST(ReplicaChoice, StartingThenCheapestToBringUpThenLeastLoaded) {
  EXPECT_EQ(pick({{S::kActive, 4}, {S::kUnloaded, 0}, {S::kLoading, 1}}, 4), 2);
  EXPECT_EQ(pick({{S::kActive, 4}, {S::kUnloaded, 0}, {S::kSuspended, 0}}, 4), 2);
  EXPECT_EQ(pick({{S::kActive, 4}, {S::kFailed, 0}, {S::kEvicted, 0}}, 4), 2);
  EXPECT_EQ(pick({{S::kActive, 6}, {S::kLoading, 5}, {S::kActive, 4}}, 4), 2);
  EXPECT_EQ(pick({}, 4), -1);
  EXPECT_EQ(pick({{S::kActive, 1}}, 0), 0);  // cap < 1 counts as 1: full, still the only one
}

}  // namespace replica_choice_test
}  // namespace tessera::fleet
