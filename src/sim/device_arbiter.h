// DeviceArbiter: the live engine::DeviceScheduler's grant rule without threads or a clock, for
// the simulator's shared device: one holder at a time, for one iteration; a client asks with its
// batch's deadline and waits; at each release the next holder is picked among the clients then
// waiting by engine::pick_next_device_user (the same function the live scheduler calls:
// starvation guard, earliest deadline among the urgent, least weighted service), so the client
// that just released never runs twice in a row while another waits. Service is charged as
// device nanoseconds (weight 1); a client that comes back from idleness starts at the virtual
// time of the latest grant (start-time fair queuing), as live.
// Thread-safety: not thread-safe; one owner (the simulator's event loop).
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/engine/device_policy.h"

namespace tessera::sim {

class DeviceArbiter {
 public:
  explicit DeviceArbiter(int32_t n_clients, const engine::DevicePolicyOptions& policy = {});

  // Client c asks at now_ns for one iteration with batch deadline deadline_ns (-1: none). True
  // when it is granted at once (the device was free); otherwise it waits for a release.
  // Precondition: c neither holds nor waits.
  bool acquire(int32_t c, int64_t deadline_ns, int64_t now_ns);
  // The holder gives the device back at now_ns, having held it since its grant; returns the
  // client granted next (-1: nobody waits). Precondition: c holds the device.
  int32_t release(int32_t c, int64_t now_ns);

  int32_t holder() const { return holder_; }
  bool waiting(int32_t c) const;
  int64_t wait_ns(int32_t c) const { return clients_[static_cast<size_t>(c)].wait_ns; }
  int64_t late_grants(int32_t c) const { return clients_[static_cast<size_t>(c)].late_grants; }

 private:
  struct Client {
    int64_t vtime_ns = 0;
    int64_t granted_ns = 0;
    int64_t wait_ns = 0;
    int64_t late_grants = 0;
  };
  struct Waiter {
    int32_t c;
    int64_t deadline_ns, enqueued_ns;
  };
  void grant(const Waiter& w, int64_t now_ns);

  engine::DevicePolicyOptions policy_;
  std::vector<Client> clients_;
  std::vector<Waiter> waiters_;
  std::vector<engine::DeviceCandidate> candidates_;  // release()'s scratch
  int32_t holder_ = -1;
  int64_t virtual_now_ns_ = 0;
};

}  // namespace tessera::sim
