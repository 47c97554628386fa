#include "tessera/sim/device_arbiter.h"

#include <algorithm>

#include "tessera/base/check.h"

namespace tessera::sim {

DeviceArbiter::DeviceArbiter(int32_t n_clients, const engine::DevicePolicyOptions& policy)
    : policy_(policy), clients_(static_cast<size_t>(n_clients)) {}

bool DeviceArbiter::waiting(int32_t c) const {
  return std::any_of(waiters_.begin(), waiters_.end(), [c](const Waiter& w) { return w.c == c; });
}

void DeviceArbiter::grant(const Waiter& w, int64_t now_ns) {
  Client& k = clients_[static_cast<size_t>(w.c)];
  holder_ = w.c;
  k.granted_ns = now_ns;
  k.wait_ns += std::max<int64_t>(0, now_ns - w.enqueued_ns);
  if (w.deadline_ns >= 0 && now_ns > w.deadline_ns) ++k.late_grants;
  virtual_now_ns_ = std::max(virtual_now_ns_, k.vtime_ns);
}

bool DeviceArbiter::acquire(int32_t c, int64_t deadline_ns, int64_t now_ns) {
  TS_CHECK_MSG(c >= 0 && static_cast<size_t>(c) < clients_.size() && holder_ != c && !waiting(c),
               "DeviceArbiter::acquire: unknown client, or it holds or waits already");
  Client& k = clients_[static_cast<size_t>(c)];
  k.vtime_ns = std::max(k.vtime_ns, virtual_now_ns_);  // idleness earns no credit
  const Waiter w{c, deadline_ns, now_ns};
  if (holder_ < 0) {
    grant(w, now_ns);
    return true;
  }
  waiters_.push_back(w);
  return false;
}

int32_t DeviceArbiter::release(int32_t c, int64_t now_ns) {
  TS_CHECK_MSG(holder_ == c, "DeviceArbiter::release: not the holder");
  Client& k = clients_[static_cast<size_t>(c)];
  k.vtime_ns += std::max<int64_t>(0, now_ns - k.granted_ns);
  holder_ = -1;
  if (waiters_.empty()) return -1;
  candidates_.clear();
  for (const Waiter& w : waiters_) {
    candidates_.push_back({clients_[static_cast<size_t>(w.c)].vtime_ns, w.deadline_ns, w.enqueued_ns});
  }
  const size_t i = engine::pick_next_device_user(candidates_, now_ns, policy_);
  const Waiter w = waiters_[i];
  waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
  grant(w, now_ns);
  return w.c;
}

}  // namespace tessera::sim
