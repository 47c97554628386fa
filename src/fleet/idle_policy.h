// IdlePolicy: decides which idle models to suspend and which suspended ones to pre-warm, from a
// FleetView and the ActivityTracker. Implementations are pure and deterministic (no I/O, no clock
// of their own: time is view.now_ns), so the simulator runs the live fleet's policy objects.
// Thread-safety: decide() is const and may be called from any thread given its inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"

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
  // The earliest time after view.now_ns at which decide() may decide something new if no
  // request arrives or finishes meanwhile (so a simulator ticks only then); kNever when nothing
  // is due; -1 when the policy cannot tell (the caller ticks periodically).
  static constexpr int64_t kNever = INT64_MAX;
  virtual int64_t next_decision_ns(const FleetView& view, const ActivityTracker& activity) const {
    (void)view;
    (void)activity;
    return -1;
  }
};

// An idle policy by name, as `tessera serve --idle-policy/--keep-alive` and a fleet config's
// "idle_policy"/"keep_alive_s" spell it:
//   fixed      FixedKeepAlivePolicy(keep_alive_s)
//   adaptive   HybridHistogramPolicy, falling back to keep_alive_s where a model's idle times
//              are not representative
//   always-on  never suspends (FixedKeepAlivePolicy with no keep-alive)
struct IdlePolicySettings {
  std::string kind = "fixed";
  double keep_alive_s = 300.0;
};
// Errors: kInvalidArgument for an unknown kind or a negative or non-finite keep-alive.
Result<std::shared_ptr<const IdlePolicy>> make_idle_policy(const IdlePolicySettings& settings);

}  // namespace tessera::fleet
