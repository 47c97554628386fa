#include "tessera/fleet/replica_choice.h"

#include <algorithm>
#include <initializer_list>

namespace tessera::fleet {

int32_t choose_replica(std::span<const ReplicaSlotView> slots, int32_t cap, ReplicaSpread spread,
                       int32_t affinity_slack) {
  if (slots.empty()) return -1;
  cap = std::max(cap, 1);
  const auto n = static_cast<int32_t>(slots.size());
  int32_t least = cap;  // the least in flight over the eligible slots
  for (const ReplicaSlotView& s : slots) {
    if (s.state == ModelState::kActive && s.in_flight < cap) least = std::min(least, s.in_flight);
  }
  // Affinity counts only on slots within the slack of the least loaded.
  auto affinity = [&](const ReplicaSlotView& s) {
    return s.in_flight <= least + std::max(affinity_slack, 0) ? s.affinity : 0;
  };
  int32_t best = -1;
  for (int32_t i = 0; i < n; ++i) {
    const ReplicaSlotView& s = slots[static_cast<size_t>(i)];
    if (s.state != ModelState::kActive || s.in_flight >= cap) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const ReplicaSlotView& b = slots[static_cast<size_t>(best)];
    if (affinity(s) != affinity(b)) {
      if (affinity(s) > affinity(b)) best = i;
      continue;
    }
    if (spread == ReplicaSpread::kSpread ? s.in_flight < b.in_flight : s.in_flight > b.in_flight) {
      best = i;
    }
  }
  if (best >= 0) return best;
  for (int32_t i = 0; i < n; ++i) {  // one on its way up with room
    const ReplicaSlotView& s = slots[static_cast<size_t>(i)];
    if ((s.state == ModelState::kLoading || s.state == ModelState::kResuming) && s.in_flight < cap) {
      return i;
    }
  }
  // Bring another up: the cheapest to bring back first (suspended, then cold).
  for (ModelState want : {ModelState::kSuspended, ModelState::kSuspending, ModelState::kEvicted,
                          ModelState::kUnloaded, ModelState::kFailed}) {
    for (int32_t i = 0; i < n; ++i) {
      if (slots[static_cast<size_t>(i)].state == want) return i;
    }
  }
  // Everything is up and full: the least loaded queues it.
  best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (slots[static_cast<size_t>(i)].in_flight < slots[static_cast<size_t>(best)].in_flight) best = i;
  }
  return best;
}

}  // namespace tessera::fleet
