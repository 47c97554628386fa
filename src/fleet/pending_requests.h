// PendingRequests: one model's requests waiting for it to come up, oldest first, each with the
// time it was submitted and its deadline. Ids only: the payload (prompt, sink) stays with the
// host that will run it. Used by FleetController.
// Thread-safety: none (the controller's owner serializes).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "tessera/engine/request.h"

namespace tessera::fleet {

struct PendingRequest {
  engine::RequestId id = 0;
  int64_t submit_ns = 0;
  int64_t deadline_ns = 0;
};

class PendingRequests {
 public:
  void push(const PendingRequest& p) { queue_.push_back(p); }
  bool empty() const { return queue_.empty(); }
  int64_t size() const { return static_cast<int64_t>(queue_.size()); }
  // Removes and returns every request, oldest first.
  std::vector<PendingRequest> take_all();
  // Removes and returns the requests whose deadline is <= now_ns, oldest first.
  std::vector<PendingRequest> take_expired(int64_t now_ns);
  // Removes `id`; false when it is not queued.
  bool remove(engine::RequestId id);
  // The earliest deadline, or -1 when empty.
  int64_t earliest_deadline_ns() const;

 private:
  std::deque<PendingRequest> queue_;
};

}  // namespace tessera::fleet
