#include "tessera/engine/device_policy.h"

#include "tessera/base/check.h"

namespace tessera::engine {

std::size_t pick_next_device_user(const std::vector<DeviceCandidate>& c, int64_t now_ns,
                             const DevicePolicyOptions& o) {
  TS_CHECK_MSG(!c.empty(), "pick_next_device_user: no candidates");
  // 1. Starvation guard.
  size_t best = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    if (now_ns - c[i].enqueued_ns <= o.max_wait_ns) continue;
    if (best == c.size() || c[i].enqueued_ns < c[best].enqueued_ns) best = i;
  }
  if (best != c.size()) return best;
  // 2. Earliest deadline among the urgent.
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].deadline_ns < 0 || c[i].deadline_ns - now_ns > o.urgent_slack_ns) continue;
    if (best == c.size() || c[i].deadline_ns < c[best].deadline_ns ||
        (c[i].deadline_ns == c[best].deadline_ns && c[i].enqueued_ns < c[best].enqueued_ns)) {
      best = i;
    }
  }
  if (best != c.size()) return best;
  // 3. Least weighted service.
  best = 0;
  for (size_t i = 1; i < c.size(); ++i) {
    if (c[i].vtime_ns < c[best].vtime_ns ||
        (c[i].vtime_ns == c[best].vtime_ns && c[i].enqueued_ns < c[best].enqueued_ns)) {
      best = i;
    }
  }
  return best;
}

}  // namespace tessera::engine
