#include "tessera/engine/device_scheduler.h"

#include <algorithm>

#include "tessera/base/check.h"

namespace tessera::engine {

namespace {
int resolve_threads(int32_t n) { return n > 0 ? n : hardware_threads(); }
}  // namespace

DeviceScheduler::DeviceScheduler(const DeviceSchedulerOptions& options)
    : options_(options),
      clock_(options.clock ? options.clock : real_clock()),
      pool_(resolve_threads(options.n_threads), options.pin_threads) {}

DeviceScheduler::~DeviceScheduler() {
  std::lock_guard lk(mu_);
  TS_CHECK_MSG(holder_ < 0 && waiters_.empty(), "DeviceScheduler destroyed while in use");
}

DeviceScheduler::ClientId DeviceScheduler::add_client(std::string name, double weight) {
  TS_CHECK_MSG(weight > 0.0, "DeviceScheduler: client weight must be > 0");
  std::lock_guard lk(mu_);
  for (size_t i = 0; i < clients_.size(); ++i) {
    Client& c = clients_[i];
    if (c.stats.name != name) continue;
    TS_CHECK_MSG(!c.live, "DeviceScheduler: a client of that name is registered");
    c.live = true;
    c.stats.weight = weight;
    return static_cast<ClientId>(i);
  }
  Client c;
  c.stats.name = std::move(name);
  c.stats.weight = weight;
  c.live = true;
  c.vtime_ns = virtual_now_ns_;
  clients_.push_back(std::move(c));
  return static_cast<ClientId>(clients_.size() - 1);
}

void DeviceScheduler::remove_client(ClientId id) {
  std::lock_guard lk(mu_);
  TS_CHECK_MSG(id >= 0 && static_cast<size_t>(id) < clients_.size() && clients_[id].live,
               "DeviceScheduler: unknown client");
  TS_CHECK_MSG(holder_ != id, "DeviceScheduler: removing a client that holds the device");
  for (const Waiter& w : waiters_) TS_CHECK_MSG(w.id != id, "DeviceScheduler: removing a waiter");
  clients_[id].live = false;
}

void DeviceScheduler::grant_locked(ClientId id, int64_t deadline_ns, int64_t enqueued_ns,
                                   int64_t now_ns) {
  Client& c = clients_[id];
  holder_ = id;
  c.granted_ns = now_ns;
  ++c.stats.grants;
  c.stats.wait_ns += std::max<int64_t>(0, now_ns - enqueued_ns);
  if (deadline_ns >= 0 && now_ns > deadline_ns) ++c.stats.late_grants;
  virtual_now_ns_ = std::max(virtual_now_ns_, c.vtime_ns);
}

DeviceScheduler::Lease DeviceScheduler::acquire(ClientId id, int64_t deadline_ns) {
  std::unique_lock lk(mu_);
  TS_CHECK_MSG(id >= 0 && static_cast<size_t>(id) < clients_.size() && clients_[id].live,
               "DeviceScheduler: unknown client");
  TS_CHECK_MSG(holder_ != id, "DeviceScheduler: client already holds the device");
  Client& c = clients_[id];
  const int64_t now = clock_->now_ns();
  // Idleness earns no credit: start no earlier than the latest grant's virtual time.
  c.vtime_ns = std::max(c.vtime_ns, virtual_now_ns_);
  Lease l(this, id);
  l.asked_ns_ = now;
  if (holder_ < 0) {
    grant_locked(id, deadline_ns, now, now);
    l.acquired_ns_ = now;
  } else {
    std::condition_variable cv;
    waiters_.push_back({id, deadline_ns, now, &cv});
    cv.wait(lk, [&] { return holder_ == id; });
    l.acquired_ns_ = clock_->now_ns();
  }
  lk.unlock();
  pool_.pin_caller();
  return l;
}

void DeviceScheduler::finish_iteration(ClientId id, const Lease& lease, int64_t released_ns) {
  const int64_t prefill_rows = lease.prefill_rows_, decode_rows = lease.decode_rows_;
  const int64_t held_ns = released_ns - lease.acquired_ns_;
  std::lock_guard lk(mu_);
  if (options_.record_iterations) {
    iterations_.push_back({id, lease.asked_ns_, clients_[id].granted_ns, lease.acquired_ns_,
                           released_ns, prefill_rows, decode_rows});
  }
  DeviceClientStats& st = clients_[id].stats;
  if (prefill_rows > 0) {
    ++st.prefill_grants;
    st.prefill_rows += prefill_rows + decode_rows;
    st.prefill_held_ns += held_ns;
  } else if (decode_rows > 0) {
    ++st.decode_grants;
    st.decode_rows += decode_rows;
    st.decode_held_ns += held_ns;
  }
}

void DeviceScheduler::release(ClientId id) {
  {
    std::lock_guard lk(mu_);
    TS_CHECK_MSG(holder_ == id, "DeviceScheduler: releasing a lease not held");
    Client& c = clients_[id];
    const int64_t now = clock_->now_ns();
    const int64_t held = std::max<int64_t>(0, now - c.granted_ns);
    c.stats.busy_ns += held;
    c.vtime_ns += static_cast<int64_t>(static_cast<double>(held) / c.stats.weight);
    holder_ = -1;
    if (waiters_.empty()) return;
    std::vector<DeviceCandidate> cand;
    cand.reserve(waiters_.size());
    for (const Waiter& w : waiters_) {
      cand.push_back({clients_[w.id].vtime_ns, w.deadline_ns, w.enqueued_ns});
    }
    const size_t k = pick_next_device_user(cand, now, options_.policy);
    const Waiter w = waiters_[k];
    waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(k));
    grant_locked(w.id, w.deadline_ns, w.enqueued_ns, now);
    // Under the lock: the cv lives in the granted thread's acquire(), which returns (and
    // destroys it) as soon as it holds mu_ and sees the grant.
    w.cv->notify_one();
  }
}

int DeviceScheduler::waiting() const {
  std::lock_guard lk(mu_);
  return static_cast<int>(waiters_.size());
}

std::vector<DeviceClientStats> DeviceScheduler::stats() const {
  std::lock_guard lk(mu_);
  std::vector<DeviceClientStats> out;
  out.reserve(clients_.size());
  for (const Client& c : clients_) out.push_back(c.stats);
  return out;
}

std::vector<DeviceIteration> DeviceScheduler::iterations() const {
  std::lock_guard lk(mu_);
  return iterations_;
}

DeviceScheduler::Lease::Lease(Lease&& other) noexcept
    : s_(other.s_),
      id_(other.id_),
      prefill_rows_(other.prefill_rows_),
      decode_rows_(other.decode_rows_),
      asked_ns_(other.asked_ns_),
      acquired_ns_(other.acquired_ns_) {
  other.s_ = nullptr;
}

DeviceScheduler::Lease& DeviceScheduler::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    s_ = other.s_;
    id_ = other.id_;
    prefill_rows_ = other.prefill_rows_;
    decode_rows_ = other.decode_rows_;
    asked_ns_ = other.asked_ns_;
    acquired_ns_ = other.acquired_ns_;
    other.s_ = nullptr;
  }
  return *this;
}

DeviceScheduler::Lease::~Lease() { release(); }

ThreadPool* DeviceScheduler::Lease::pool() const { return s_ ? &s_->pool_ : nullptr; }

void DeviceScheduler::Lease::release() {
  if (s_ == nullptr) return;
  DeviceScheduler* s = s_;
  s_ = nullptr;
  s->pool_.unpin_caller();
  s->release(id_);
  s->finish_iteration(id_, *this, s->clock_->now_ns());
  prefill_rows_ = decode_rows_ = 0;
}

}  // namespace tessera::engine
