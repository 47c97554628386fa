// Replica routing rules: the pure rules around choose_replica (replica_choice.h) that pick which
// of a model's replica slots takes a request, shared by the simulator (sim/simulator.cpp) and the
// cluster router (cluster/replica_router.h) so both run one rule set.
//   route_replica      round-robin (when asked): the next Active slot below `cap` from the
//                      caller's cursor on; otherwise, or when none is, choose_replica's rule
//                      (affinity, spread/pack, slots coming up, another slot up, least loaded).
//   slo_replica_cap    the cap while a model misses its TTFT SLO: halved (at least 1), so a
//                      replica counts as full sooner and the model scales out.
//   SloWindow          whether a model misses its SLO: any of its last `window` answers that
//                      came within `horizon_ns` of now was late (window 0: never).
// Thread-safety: the functions are pure; a SloWindow is serialized by its owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <utility>

#include "tessera/fleet/replica_choice.h"

namespace tessera::fleet {

struct RoutingRule {
  int32_t cap = 4;            // in-flight requests per slot before another comes up (< 1: 1)
  bool round_robin = false;   // Active slots in turn, before choose_replica's rule
  ReplicaSpread spread = ReplicaSpread::kSpread;
};

// The index into `slots` of the chosen slot; -1 only when `slots` is empty. `rr_cursor` (the
// model's round-robin position; may be null when !rule.round_robin) moves past a slot taken in turn.
int32_t route_replica(std::span<const ReplicaSlotView> slots, const RoutingRule& rule, size_t* rr_cursor);

// `cap` (at least 1), halved (at least 1) when `missing_slo`.
int32_t slo_replica_cap(int32_t cap, bool missing_slo);

class SloWindow {
 public:
  static constexpr int64_t kDefaultHorizonNs = 60'000'000'000;
  explicit SloWindow(int32_t window = 16, int64_t horizon_ns = kDefaultHorizonNs)
      : window_(window < 0 ? 0 : static_cast<size_t>(window)), horizon_ns_(horizon_ns) {}
  // An answer at `at_ns` whose TTFT was within the SLO (`met`) or not.
  void record(int64_t at_ns, bool met);
  // Whether any remembered answer within the horizon of `now_ns` was late.
  bool missing(int64_t now_ns) const;

 private:
  size_t window_;
  int64_t horizon_ns_;
  std::deque<std::pair<int64_t, bool>> recent_;  // (answered at, met), newest last
};

}  // namespace tessera::fleet
