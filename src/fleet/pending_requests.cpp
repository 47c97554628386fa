#include "tessera/fleet/pending_requests.h"

#include <algorithm>

namespace tessera::fleet {

std::vector<PendingRequest> PendingRequests::take_all() {
  std::vector<PendingRequest> out(queue_.begin(), queue_.end());
  queue_.clear();
  return out;
}

std::vector<PendingRequest> PendingRequests::take_expired(int64_t now_ns) {
  std::vector<PendingRequest> out;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->deadline_ns <= now_ns) {
      out.push_back(*it);
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

bool PendingRequests::remove(engine::RequestId id) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [id](const PendingRequest& p) { return p.id == id; });
  if (it == queue_.end()) return false;
  queue_.erase(it);
  return true;
}

int64_t PendingRequests::earliest_deadline_ns() const {
  int64_t best = -1;
  for (const auto& p : queue_) {
    if (best < 0 || p.deadline_ns < best) best = p.deadline_ns;
  }
  return best;
}

}  // namespace tessera::fleet
