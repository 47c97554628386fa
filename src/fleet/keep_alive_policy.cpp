#include "tessera/fleet/keep_alive_policy.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::fleet {

std::vector<Decision> FixedKeepAlivePolicy::decide(const FleetView& view,
                                                   const ActivityTracker& activity) const {
  std::vector<Decision> out;
  if (keep_alive_ns_ < 0) return out;
  for (const ModelView& m : view.models) {
    if (m.state != ModelState::kActive || m.pinned) continue;
    const int64_t idle = idle_for_ns(m, activity, view.now_ns);
    if (idle < 0 || idle < keep_alive_ns_) continue;
    out.push_back({Action::kSuspend, m.name,
                   fmt::format("idle {:.3f} s >= keep-alive {:.3f} s", idle * 1e-9,
                               keep_alive_ns_ * 1e-9)});
  }
  return out;
}

int64_t FixedKeepAlivePolicy::next_decision_ns(const FleetView& view,
                                               const ActivityTracker& activity) const {
  int64_t next = kNever;
  if (keep_alive_ns_ < 0) return next;
  for (const ModelView& m : view.models) {
    if (m.state != ModelState::kActive || m.pinned) continue;
    const int64_t idle = idle_for_ns(m, activity, view.now_ns);
    if (idle < 0) continue;
    next = std::min(next, view.now_ns + std::max<int64_t>(0, keep_alive_ns_ - idle));
  }
  return next;
}

}  // namespace tessera::fleet
