// choose_replica: which of a model's replica slots takes one request - the scaling rule shared by
// the simulator's demand-driven policies (sim/simulator.h, "scaling" and "pooled") and the
// cluster router (cluster/cluster_controller.h). Each slot is one model in a FleetController;
// this picks the slot, the controller then dispatches, queues or brings it up.
//
//   1. an Active slot below `cap` in-flight requests: the one holding most of the request's
//      prefix (affinity, when the caller knows it) among those within `affinity_slack` requests
//      of the least loaded (so a prefix everyone shares does not pile every request onto one
//      replica: the load balance guard of SGLang's cache-aware router), then by the spread/pack
//      rule (spread: fewest in flight; pack: most in flight, so the others can go idle);
//   2. else a slot on its way up (Loading, Resuming) below `cap`;
//   3. else another slot comes up, the cheapest to bring back first: Suspended, Suspending,
//      Evicted, Unloaded, Failed;
//   4. else every slot is up and full: the least loaded queues it.
// Ties go to the earlier slot. Pure and deterministic.
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/fleet/model_state.h"

namespace tessera::fleet {

struct ReplicaSlotView {
  ModelState state = ModelState::kUnloaded;
  int32_t in_flight = 0;  // requests routed to the slot and not yet finished (queued included)
  int32_t affinity = 0;   // how much of this request's prefix the slot likely caches (0: unknown)
};

enum class ReplicaSpread : uint8_t { kSpread, kPack };

// The index into `slots` of the chosen slot; -1 only when `slots` is empty. `cap` < 1 counts as 1.
int32_t choose_replica(std::span<const ReplicaSlotView> slots, int32_t cap, ReplicaSpread spread,
                       int32_t affinity_slack = 2);

}  // namespace tessera::fleet
