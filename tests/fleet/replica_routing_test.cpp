// The routing rules the simulator and the cluster router share: round-robin over Active slots
// below the cap (else choose_replica), the SLO cap halving and the SLO window.
#include "tessera/fleet/replica_routing.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::fleet {
namespace replica_routing_test {

using S = ModelState;

TEST(ReplicaRouting, WithoutRoundRobinItIsChooseReplica) {
  const std::vector<std::vector<ReplicaSlotView>> cases = {
      {{S::kActive, 2}, {S::kActive, 1}, {S::kActive, 3}},
      {{S::kActive, 4}, {S::kUnloaded, 0}, {S::kLoading, 1}},
      {{S::kActive, 0, 0}, {S::kActive, 2, 5}, {S::kActive, 1, 3}},
      {{S::kSuspended, 0}, {S::kFailed, 0}},
      {}};
  for (const auto& v : cases) {
    for (ReplicaSpread spread : {ReplicaSpread::kSpread, ReplicaSpread::kPack}) {
      size_t cursor = 7;
      EXPECT_EQ(route_replica(v, {4, false, spread}, &cursor), choose_replica(v, 4, spread));
      EXPECT_EQ(route_replica(v, {4, false, spread}, nullptr), choose_replica(v, 4, spread));
      EXPECT_EQ(cursor, 7u);
    }
  }
}

TEST(ReplicaRouting, RoundRobinTakesActiveSlotsBelowTheCapInTurn) {
  std::vector<ReplicaSlotView> v = {{S::kActive, 0}, {S::kUnloaded, 0}, {S::kActive, 3}, {S::kActive, 1}};
  const RoutingRule rule{2, true, ReplicaSpread::kSpread};
  size_t cursor = 0;
  EXPECT_EQ(route_replica(v, rule, &cursor), 0);
  EXPECT_EQ(route_replica(v, rule, &cursor), 3);  // 1 is not Active, 2 is at the cap
  EXPECT_EQ(route_replica(v, rule, &cursor), 0);  // wraps around
  EXPECT_EQ(cursor, 1u);
  // None Active below the cap: choose_replica's rule (bring another up), the cursor stays.
  v = {{S::kActive, 2}, {S::kUnloaded, 0}};
  EXPECT_EQ(route_replica(v, rule, &cursor), 1);
  EXPECT_EQ(cursor, 1u);
}

TEST(ReplicaRouting, SloCapHalvesAtLeastToOne) {
  EXPECT_EQ(slo_replica_cap(4, false), 4);
  EXPECT_EQ(slo_replica_cap(4, true), 2);
  EXPECT_EQ(slo_replica_cap(3, true), 1);
  EXPECT_EQ(slo_replica_cap(1, true), 1);
  EXPECT_EQ(slo_replica_cap(0, false), 1);
  EXPECT_EQ(slo_replica_cap(-3, true), 1);
}

TEST(ReplicaRouting, SloWindowMissesWithinTheHorizonOfTheLastAnswers) {
  constexpr int64_t kS = 1'000'000'000;
  SloWindow w(3, 60 * kS);
  EXPECT_FALSE(w.missing(0));
  w.record(1 * kS, false);
  EXPECT_TRUE(w.missing(2 * kS));
  EXPECT_TRUE(w.missing(61 * kS));
  EXPECT_FALSE(w.missing(62 * kS));  // past the horizon
  for (int i = 0; i < 3; ++i) w.record((2 + i) * kS, true);
  EXPECT_FALSE(w.missing(5 * kS));   // pushed out of the window
  SloWindow off(0);
  off.record(0, false);
  EXPECT_FALSE(off.missing(0));
}

}  // namespace replica_routing_test
}  // namespace tessera::fleet
