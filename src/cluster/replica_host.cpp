#include "tessera/cluster/replica_host.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "tessera/base/clock.h"
#include "tessera/base/log.h"
#include "tessera/cluster/upstream_call.h"

namespace tessera::cluster {
namespace {

double now_s() { return real_clock()->now_s(); }

// True when `name` resolves to an address (a node's NodeHostname normally does).
bool resolves(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(name.c_str(), nullptr, &hints, &res);
  if (res != nullptr) freeaddrinfo(res);
  return rc == 0;
}

// Where to reach a replica running on Slurm node `node`: this host for our own node (or while
// the node is not known yet), else the node's name; a node name that does not resolve is one of
// several slurmd "nodes" sharing this host (scripts/slurm-local.sh with TESSERA_SLURM_NODES),
// reached on loopback.
std::string replica_address(const std::string& node, const std::string& here) {
  if (node.empty() || node == here || !resolves(node)) return "127.0.0.1";
  return node;
}

std::string short_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  std::string h(buf);
  return h.substr(0, h.find('.'));
}

}  // namespace

SlurmReplicaHost::SlurmReplicaHost(std::vector<ReplicaSlot> slots, ReplicaHostOptions options,
                                   SlurmClient* slurm, Callbacks callbacks)
    : slots_(std::move(slots)),
      options_(std::move(options)),
      slurm_(slurm),
      callbacks_(std::move(callbacks)),
      state_(slots_.size()) {}

SlurmReplicaHost::~SlurmReplicaHost() { stop(); }

void SlurmReplicaHost::stop() {
  std::list<std::thread> movers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    movers.swap(movers_);
    finished_movers_.clear();
  }
  cv_.notify_all();
  for (auto& t : movers) {
    if (t.joinable()) t.join();
  }
}

bool SlurmReplicaHost::sleep_for(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stopping_; });
}

int64_t SlurmReplicaHost::job_of(fleet::ModelIndex m) const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_[static_cast<size_t>(m)].job;
}

void SlurmReplicaHost::begin_move(fleet::ModelIndex m, fleet::Move move) {
  std::lock_guard<std::mutex> lock(mu_);
  // Join the move threads that have finished.
  for (const auto id : finished_movers_) {
    for (auto it = movers_.begin(); it != movers_.end(); ++it) {
      if (it->get_id() == id) {
        it->join();
        movers_.erase(it);
        break;
      }
    }
  }
  finished_movers_.clear();
  movers_.emplace_back([this, m, move] {
    run_move(m, move);
    std::lock_guard<std::mutex> l(mu_);
    finished_movers_.push_back(std::this_thread::get_id());
  });
}

void SlurmReplicaHost::run_move(fleet::ModelIndex m, fleet::Move move) {
  Status st;
  switch (move) {
    case fleet::Move::kLoad:
    case fleet::Move::kResume:
      st = bring_up(m);
      break;
    case fleet::Move::kSuspend:
      st = take_down(m);
      break;
    case fleet::Move::kEvict:
      break;  // nothing is held between suspend and evict
  }
  callbacks_.move_done(m, st);
}

std::string SlurmReplicaHost::log_path(const ReplicaSlot& s) const {
  return options_.log_dir.empty() ? std::string() : options_.log_dir + "/" + s.job_name + ".log";
}

std::string SlurmReplicaHost::log_tail(const ReplicaSlot& s) const {
  const std::string path = log_path(s);
  if (path.empty()) return "no log kept";
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last.empty() ? fmt::format("its log {} is empty", path) : fmt::format("{} says: {}", path, last);
}

Status SlurmReplicaHost::bring_up(fleet::ModelIndex m) {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  const double t0 = now_s();
  // Adopt the slot's job when Slurm still has it (a restarted controller); else submit one.
  int64_t job = 0;
  std::string node;
  auto listed = slurm_->jobs(s.job_name);
  if (!listed.is_ok()) return listed.status();
  for (const SlurmJob& j : *listed) {
    if (j.name == s.job_name && j.state != SlurmJobState::kEnded && j.state != SlurmJobState::kCompleting) {
      job = j.id;
      node = j.node;
    }
  }
  if (job == 0) {
    SlurmJobSpec spec;
    spec.name = s.job_name;
    spec.cpus = s.cpus;
    spec.memory_mb = s.memory_mb;
    spec.partition = options_.partition;
    spec.output = log_path(s);
    spec.argv = {options_.tessera_bin, "serve", "--model", s.path, "--name", s.model,
                 "--host", "0.0.0.0", "--port", std::to_string(s.port),
                 "--threads", std::to_string(s.cpus)};
    spec.argv.insert(spec.argv.end(), options_.serve_args.begin(), options_.serve_args.end());
    auto submitted = slurm_->submit(spec);
    if (!submitted.is_ok()) return submitted.status().with_context("submitting " + s.job_name);
    job = *submitted;
    log_info("cluster: {} submitted as Slurm job {}", s.job_name, job);
  } else {
    log_info("cluster: {} adopts running Slurm job {}", s.job_name, job);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_[static_cast<size_t>(m)].job = job;
    state_[static_cast<size_t>(m)].up = false;
  }
  double next_check = now_s() + 0.5;
  const std::string here = short_hostname();
  std::string host, resolved_node;
  while (true) {
    if (node != resolved_node || host.empty()) {  // resolve once per node seen
      host = replica_address(node, here);
      resolved_node = node;
    }
    auto health = upstream_get(host, s.port, "/health", 1.0);
    if (health.is_ok() && health->status == 200) {
      std::lock_guard<std::mutex> lock(mu_);
      SlotState& ss = state_[static_cast<size_t>(m)];
      ss.host = host;
      ss.up = true;
      ss.last_start_s = now_s() - t0;
      log_info("cluster: {} (job {}) ready in {:.2f} s", s.job_name, job, ss.last_start_s);
      return Status::ok();
    }
    if (now_s() >= next_check) {
      next_check = now_s() + 0.5;
      auto now_listed = slurm_->jobs(s.job_name);
      if (now_listed.is_ok()) {
        bool alive = false;
        for (const SlurmJob& j : *now_listed) {
          if (j.id == job && j.state != SlurmJobState::kEnded) {
            alive = true;
            node = j.node;
          }
        }
        if (!alive) {
          std::lock_guard<std::mutex> lock(mu_);
          state_[static_cast<size_t>(m)].job = 0;
          return Status(ErrorCode::kUnavailable,
                        fmt::format("replica {} (Slurm job {}) ended before it was ready; {}",
                                    s.job_name, job, log_tail(s)));
        }
      }
    }
    if (now_s() - t0 > options_.ready_timeout_s) {
      (void)slurm_->cancel(job);
      std::lock_guard<std::mutex> lock(mu_);
      state_[static_cast<size_t>(m)].job = 0;
      return Status(ErrorCode::kDeadlineExceeded,
                    fmt::format("replica {} (Slurm job {}) not ready after {:.0f} s; cancelled; {}",
                                s.job_name, job, options_.ready_timeout_s, log_tail(s)));
    }
    if (!sleep_for(options_.poll_s)) {
      return Status(ErrorCode::kCancelled, fmt::format("cluster stopping while {} started", s.job_name));
    }
  }
}

Status SlurmReplicaHost::take_down(fleet::ModelIndex m) {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  // Drain: the requests already forwarded finish (or fail) first; none is cut off.
  const double t0 = now_s();
  while (callbacks_.in_flight(m) > 0 && now_s() - t0 < options_.drain_timeout_s) {
    if (!sleep_for(0.02)) break;
  }
  int64_t job = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job = state_[static_cast<size_t>(m)].job;
    state_[static_cast<size_t>(m)].up = false;
  }
  if (job == 0) return Status::ok();
  if (Status st = slurm_->cancel(job); !st.is_ok()) return st.with_context("releasing " + s.job_name);
  // Wait until Slurm no longer runs it, so its port and CPUs are free for the next start.
  while (now_s() - t0 < options_.drain_timeout_s + 30.0) {
    auto listed = slurm_->jobs(s.job_name);
    bool running = false;
    if (listed.is_ok()) {
      for (const SlurmJob& j : *listed) running |= j.id == job && j.state != SlurmJobState::kEnded;
    }
    if (listed.is_ok() && !running) break;
    if (!sleep_for(0.1)) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  state_[static_cast<size_t>(m)].job = 0;
  log_info("cluster: {} (job {}) released", s.job_name, job);
  return Status::ok();
}

Status SlurmReplicaHost::dispatch(fleet::ModelIndex m, engine::RequestId id) {
  std::string host;
  {
    std::lock_guard<std::mutex> lock(mu_);
    host = state_[static_cast<size_t>(m)].host;
  }
  callbacks_.forward(m, id, host, slots_[static_cast<size_t>(m)].port);
  return Status::ok();
}

void SlurmReplicaHost::reject(fleet::ModelIndex m, engine::RequestId id, const Status& why) {
  callbacks_.reject(m, id, why);
}

fleet::ModelCosts SlurmReplicaHost::costs(fleet::ModelIndex m) const {
  std::lock_guard<std::mutex> lock(mu_);
  fleet::ModelCosts c;
  c.host_bytes = 0;  // a released replica keeps nothing
  const double start = state_[static_cast<size_t>(m)].last_start_s;
  c.reload_estimate_s = start > 0 ? start : 5.0;
  c.resume_estimate_s = c.reload_estimate_s;
  return c;
}

std::vector<fleet::ModelIndex> SlurmReplicaHost::reconcile(const std::vector<SlurmJob>& jobs) {
  std::vector<fleet::ModelIndex> lost;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    SlotState& ss = state_[i];
    if (!ss.up || ss.job == 0) continue;
    bool alive = false;
    for (const SlurmJob& j : jobs) alive |= j.id == ss.job && j.state == SlurmJobState::kRunning;
    if (!alive) {
      ss.up = false;
      lost.push_back(static_cast<fleet::ModelIndex>(i));
    }
  }
  return lost;
}

}  // namespace tessera::cluster
