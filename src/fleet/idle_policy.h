// IdlePolicy: decides which idle models to suspend and which suspended ones to pre-warm, from a
// FleetView and the ActivityTracker. Implementations are pure and deterministic (no I/O, no clock
// of their own: time is view.now_ns), so the simulator runs the live fleet's policy objects.
// Thread-safety: decide() is const and may be called from any thread given its inputs.
#pragma once

#include <string_view>
#include <vector>

#include "tessera/fleet/activity_tracker.h"
#include "tessera/fleet/fleet_view.h"

namespace tessera::fleet {

class IdlePolicy {
 public:
  virtual ~IdlePolicy() = default;
  virtual std::string_view name() const = 0;
  // Decisions in view.models order. Never decides for a busy or pinned model, and only proposes
  // legal moves: kSuspend for Active models, kPrewarm for Suspended or Evicted ones.
  virtual std::vector<Decision> decide(const FleetView& view,
                                       const ActivityTracker& activity) const = 0;
};

}  // namespace tessera::fleet
