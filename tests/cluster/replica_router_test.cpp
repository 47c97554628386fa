// ReplicaRouter apart from HTTP: round-robin, prefix affinity, the cap halved under SLO misses,
// and the same choices as the simulator's routing (fleet::route_replica with the sim's rule) for
// the same slots.
#include "tessera/cluster/replica_router.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tessera::cluster {
namespace replica_router_test {

using S = fleet::ModelState;
using V = std::vector<fleet::ReplicaSlotView>;
constexpr int64_t kS = 1'000'000'000;

RouterOptions opts(RoutingPolicy routing, int32_t cap = 4, int32_t window = 16) {
  RouterOptions o;
  o.routing = routing;
  o.replica_cap = cap;
  o.slo_window = window;
  o.prefix_block_chars = 4;
  return o;
}

TEST(ReplicaRouter, RoundRobinTakesActiveReplicasInTurn) {
  ReplicaRouter r(opts(RoutingPolicy::kRoundRobin), 1);
  V v = {{S::kActive, 0}, {S::kActive, 3}, {S::kActive, 0}};
  EXPECT_EQ(r.choose(0, "x", v, 0).replica, 0);
  EXPECT_EQ(r.choose(0, "x", v, 0).replica, 1);
  EXPECT_EQ(r.choose(0, "x", v, 0).replica, 2);
  EXPECT_EQ(r.choose(0, "x", v, 0).replica, 0);
}

TEST(ReplicaRouter, PrefixAffinityFollowsTheRecordedPrefix) {
  ReplicaRouter r(opts(RoutingPolicy::kPrefix), 2);
  V v = {{S::kActive, 0}, {S::kActive, 0}};
  const RouteChoice first = r.choose(0, "aaaabbbb", v, 0);
  EXPECT_EQ(first.replica, 0);
  EXPECT_FALSE(first.affinity);
  V busier = {{S::kActive, 1}, {S::kActive, 0}};
  const RouteChoice again = r.choose(0, "aaaabbbbcccc", busier, 0);
  EXPECT_EQ(again.replica, 0);  // within the slack: the replica holding the prefix
  EXPECT_TRUE(again.affinity);
  EXPECT_EQ(r.choose(1, "aaaabbbb", v, 0).affinity, false);  // another model's index
  r.forget(0, 0);
  EXPECT_EQ(r.choose(0, "aaaabbbb", busier, 0).replica, 1);
  // Least-loaded ignores prefixes.
  ReplicaRouter ll(opts(RoutingPolicy::kLeastLoaded), 1);
  (void)ll.choose(0, "aaaabbbb", v, 0);
  EXPECT_EQ(ll.choose(0, "aaaabbbb", busier, 0).replica, 1);
}

TEST(ReplicaRouter, SloMissesHalveTheCapUntilTheyAgeOut) {
  ReplicaRouter r(opts(RoutingPolicy::kLeastLoaded, 4, 2), 1);
  V v = {{S::kActive, 2}, {S::kUnloaded, 0}};
  EXPECT_EQ(r.choose(0, "", v, 0).replica, 0);  // 2 < 4
  r.answered(0, 1 * kS, false);
  EXPECT_TRUE(r.slo_pressure(0, 2 * kS));
  const RouteChoice c = r.choose(0, "", v, 2 * kS);
  EXPECT_TRUE(c.slo_capped);
  EXPECT_EQ(c.replica, 1);  // 2 >= 4 / 2: full sooner, another comes up
  EXPECT_FALSE(r.choose(0, "", v, 62 * kS).slo_capped);
  r.answered(0, 3 * kS, true);
  r.answered(0, 4 * kS, true);  // the miss leaves the window of 2
  EXPECT_FALSE(r.slo_pressure(0, 5 * kS));
  ReplicaRouter off(opts(RoutingPolicy::kLeastLoaded, 4, 0), 1);
  off.answered(0, 0, false);
  EXPECT_FALSE(off.slo_pressure(0, 0));
}

// The simulator routes with fleet::route_replica({cap, no round-robin, spread}) over its slots'
// states and in-flight counts; the cluster's least-loaded router without SLO misses must choose
// the same slots for the same inputs.
TEST(ReplicaRouter, PicksWhatTheSimulatorPicksForTheSameSlots) {
  std::mt19937 rng(46);
  const S states[] = {S::kActive, S::kActive, S::kActive, S::kLoading, S::kResuming, S::kSuspended,
                      S::kSuspending, S::kUnloaded, S::kEvicted, S::kFailed};
  ReplicaRouter router(opts(RoutingPolicy::kLeastLoaded, 3), 1);
  for (int trial = 0; trial < 2000; ++trial) {
    V v(1 + rng() % 6);
    for (auto& s : v) s = {states[rng() % 10], static_cast<int32_t>(rng() % 5), 0};
    const V sim_view = v;
    const int32_t sim = fleet::route_replica(sim_view, {3, false, fleet::ReplicaSpread::kSpread}, nullptr);
    EXPECT_EQ(router.choose(0, "prompt", v, 0).replica, sim) << "trial " << trial;
  }
}

}  // namespace replica_router_test
}  // namespace tessera::cluster
