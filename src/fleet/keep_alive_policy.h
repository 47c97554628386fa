// FixedKeepAlivePolicy: the industry default (Knative, AWS Lambda, llama.cpp's
// --sleep-idle-seconds): suspend an Active model once it has been idle for a fixed time. Never
// pre-warms. A negative keep-alive never suspends (the always-on baseline).
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>

#include "tessera/fleet/idle_policy.h"

namespace tessera::fleet {

class FixedKeepAlivePolicy final : public IdlePolicy {
 public:
  explicit FixedKeepAlivePolicy(int64_t keep_alive_ns) : keep_alive_ns_(keep_alive_ns) {}
  static FixedKeepAlivePolicy always_on() { return FixedKeepAlivePolicy(-1); }

  std::string_view name() const override { return keep_alive_ns_ < 0 ? "always-on" : "keep-alive"; }
  // kSuspend for each Active, unpinned model idle (idle_for_ns) for >= keep_alive_ns.
  std::vector<Decision> decide(const FleetView& view,
                               const ActivityTracker& activity) const override;
  // When the next idle model reaches its keep-alive.
  int64_t next_decision_ns(const FleetView& view, const ActivityTracker& activity) const override;
  int64_t keep_alive_ns() const { return keep_alive_ns_; }

 private:
  int64_t keep_alive_ns_;
};

}  // namespace tessera::fleet
