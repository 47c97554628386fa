#include "tessera/fleet/replica_routing.h"

#include <algorithm>

namespace tessera::fleet {

int32_t route_replica(std::span<const ReplicaSlotView> slots, const RoutingRule& rule, size_t* rr_cursor) {
  const int32_t cap = std::max(rule.cap, 1);
  if (rule.round_robin && rr_cursor != nullptr && !slots.empty()) {
    for (size_t step = 0; step < slots.size(); ++step) {
      const size_t c = (*rr_cursor + step) % slots.size();
      if (slots[c].state == ModelState::kActive && slots[c].in_flight < cap) {
        *rr_cursor = c + 1;
        return static_cast<int32_t>(c);
      }
    }
  }
  return choose_replica(slots, cap, rule.spread);
}

int32_t slo_replica_cap(int32_t cap, bool missing_slo) {
  cap = std::max(cap, 1);
  return missing_slo ? std::max(1, cap / 2) : cap;
}

void SloWindow::record(int64_t at_ns, bool met) {
  recent_.emplace_back(at_ns, met);
  while (recent_.size() > window_) recent_.pop_front();
}

bool SloWindow::missing(int64_t now_ns) const {
  if (window_ == 0) return false;
  return std::any_of(recent_.begin(), recent_.end(),
                     [&](const auto& r) { return !r.second && now_ns - r.first <= horizon_ns_; });
}

}  // namespace tessera::fleet
