#include "tessera/cluster/replica_host.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "tessera/base/clock.h"
#include "tessera/base/log.h"
#include "tessera/cluster/upstream_call.h"

namespace tessera::cluster {
namespace {

constexpr int64_t kReleaseGraceNs = 30'000'000'000;  // a release waits the drain timeout + this
constexpr int64_t kReleasePollNs = 100'000'000;      // Slurm's job list read while a job leaves

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

// The state a fleet-mode replica reports for `model` (GET /admin/models).
Result<std::string> replica_model_state(const std::string& host, int port, const std::string& model) {
  auto reply = upstream_get(host, port, "/admin/models", 5.0);
  if (!reply.is_ok()) return reply.status();
  if (reply->status != 200) {
    return Status(ErrorCode::kUnavailable, fmt::format("GET /admin/models answered {}", reply->status));
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array()) {
    for (const auto& e : j["data"]) {
      if (e.is_object() && e.value("id", std::string()) == model) return e.value("state", std::string());
    }
  }
  return not_found(fmt::format("the replica does not list model '{}'", model));
}

}  // namespace

Result<SuspendMode> suspend_mode_from_name(const std::string& name) {
  if (name == "auto") return SuspendMode::kAuto;
  if (name == "keep") return SuspendMode::kKeep;
  if (name == "release") return SuspendMode::kRelease;
  return invalid_argument(fmt::format("unknown suspend mode '{}': expected auto, keep or release", name));
}

std::string_view suspend_mode_name(SuspendMode mode) {
  switch (mode) {
    case SuspendMode::kAuto: return "auto";
    case SuspendMode::kKeep: return "keep";
    case SuspendMode::kRelease: return "release";
  }
  return "unknown";
}

SlurmReplicaHost::SlurmReplicaHost(std::vector<ReplicaSlot> slots, ReplicaHostOptions options,
                                   SlurmClient* slurm, const Clock* clock, Callbacks callbacks)
    : slots_(std::move(slots)),
      options_(std::move(options)),
      slurm_(slurm),
      clock_(clock),
      callbacks_(std::move(callbacks)),
      ready_timeout_ns_(static_cast<int64_t>(options_.ready_timeout_s * 1e9)),
      drain_timeout_ns_(static_cast<int64_t>(options_.drain_timeout_s * 1e9)),
      poll_ns_(static_cast<int64_t>(options_.poll_s * 1e9)),
      state_(slots_.size()) {
  for (size_t i = 0; i < slots_.size(); ++i) {
    int32_t j = -1;
    for (size_t k = 0; k < jobs_.size(); ++k) {
      if (jobs_[k].name == slots_[i].job_name) j = static_cast<int32_t>(k);
    }
    if (j < 0) {
      j = static_cast<int32_t>(jobs_.size());
      jobs_.emplace_back();
      jobs_.back().name = slots_[i].job_name;
    }
    jobs_[static_cast<size_t>(j)].members.push_back(static_cast<fleet::ModelIndex>(i));
    state_[i].job = j;
  }
}

bool SlurmReplicaHost::fleet_mode(fleet::ModelIndex m) const {
  return options_.suspend != SuspendMode::kRelease ||
         jobs_[static_cast<size_t>(state_[static_cast<size_t>(m)].job)].members.size() > 1;
}

bool SlurmReplicaHost::others_hold_locked(fleet::ModelIndex m, bool count_kept) const {
  for (fleet::ModelIndex o : jobs_[static_cast<size_t>(state_[static_cast<size_t>(m)].job)].members) {
    if (o == m) continue;
    const SlotState& ss = state_[static_cast<size_t>(o)];
    if (ss.up || ss.bringing || (count_kept && ss.measures.kept)) return true;
  }
  return false;
}

bool SlurmReplicaHost::claim_job_locked(std::unique_lock<std::mutex>& lock, int32_t j) {
  cv_.wait(lock, [&] { return stopping_ || !jobs_[static_cast<size_t>(j)].busy; });
  if (stopping_) return false;
  jobs_[static_cast<size_t>(j)].busy = true;
  return true;
}

void SlurmReplicaHost::release_job_claim(int32_t j) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[static_cast<size_t>(j)].busy = false;
  }
  cv_.notify_all();
}

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

bool SlurmReplicaHost::sleep_ns(int64_t ns) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, std::chrono::nanoseconds(ns), [&] { return stopping_; });
}

int64_t SlurmReplicaHost::job_of(fleet::ModelIndex m) const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_[static_cast<size_t>(state_[static_cast<size_t>(m)].job)].id;
}

bool SlurmReplicaHost::kept(fleet::ModelIndex m) const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_[static_cast<size_t>(m)].measures.kept;
}

ReplicaMeasures SlurmReplicaHost::measured(fleet::ModelIndex m) const {
  std::lock_guard<std::mutex> lock(mu_);
  ReplicaMeasures r = state_[static_cast<size_t>(m)].measures;
  const JobState& js = jobs_[static_cast<size_t>(state_[static_cast<size_t>(m)].job)];
  r.cold_starts = js.cold_starts;
  r.cold_start_s =
      js.cold_starts > 0 ? static_cast<double>(js.cold_sum_ns) * 1e-9 / static_cast<double>(js.cold_starts) : 0.0;
  return r;
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
    case fleet::Move::kEvict: {
      // A kept model: evicted in place while its job serves others, else the job is released.
      // After a release nothing is held.
      std::unique_lock<std::mutex> lock(mu_);
      const int32_t j = state_[static_cast<size_t>(m)].job;
      if (!state_[static_cast<size_t>(m)].measures.kept || !claim_job_locked(lock, j)) break;
      state_[static_cast<size_t>(m)].measures.kept = false;
      ++state_[static_cast<size_t>(m)].measures.kept_released;
      const int64_t job = jobs_[static_cast<size_t>(j)].id;
      const bool shared = others_hold_locked(m, true);
      const std::string host = jobs_[static_cast<size_t>(j)].host;
      lock.unlock();
      if (job != 0 && shared) {
        st = admin_move(m, host, "evict", "evicted", drain_timeout_ns_);
        if (!st.is_ok()) log_warn("cluster: evicting {} in place: {}", slots_[static_cast<size_t>(m)].model, st.message());
        st = Status::ok();  // the job stays for its other models either way
      } else if (job != 0) {
        st = release(j, job, clock_->now_ns());
      }
      release_job_claim(j);
      break;
    }
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

Result<std::string> SlurmReplicaHost::write_config(int32_t j) const {
  const JobState& js = jobs_[static_cast<size_t>(j)];
  std::string dir = options_.config_dir.empty() ? options_.log_dir : options_.config_dir;
  std::error_code ec;
  if (dir.empty()) dir = (std::filesystem::temp_directory_path(ec) / "tessera-cluster").string();
  std::filesystem::create_directories(dir, ec);
  const std::string path = dir + "/" + js.name + ".json";
  nlohmann::json models = nlohmann::json::array();
  for (fleet::ModelIndex m : js.members) {
    models.push_back({{"name", slots_[static_cast<size_t>(m)].model}, {"path", slots_[static_cast<size_t>(m)].path}});
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"models", models}}.dump(2) << "\n";
    if (!out.good()) return Status(ErrorCode::kUnavailable, fmt::format("cannot write {}", tmp));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status(ErrorCode::kUnavailable, fmt::format("cannot write {}: {}", path, ec.message()));
  return path;
}

Status SlurmReplicaHost::admin_move(fleet::ModelIndex m, const std::string& host,
                                    const std::string& action, const std::string& want,
                                    int64_t timeout_ns) {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  const int64_t t0 = clock_->now_ns();
  const double timeout_s = static_cast<double>(timeout_ns) * 1e-9;
  auto reply = upstream_fetch(host, s.port, "POST", fmt::format("/admin/models/{}/{}", s.model, action),
                              "{}", std::max(timeout_s, 1.0));
  if (!reply.is_ok()) return reply.status().with_context(fmt::format("{} {}", action, s.model));
  if (reply->status != 200) {
    return Status(ErrorCode::kUnavailable, fmt::format("{} {} in {}: the replica answered {}: {}", action,
                                                       s.model, s.job_name, reply->status, reply->body));
  }
  while (true) {
    auto state = replica_model_state(host, s.port, s.model);
    if (state.is_ok() && *state == want) return Status::ok();
    if (state.is_ok() && *state == "failed") {
      return Status(ErrorCode::kUnavailable, fmt::format("{} {} in {}: the model failed", action, s.model, s.job_name));
    }
    if (clock_->now_ns() - t0 > timeout_ns) {
      return Status(ErrorCode::kDeadlineExceeded,
                    fmt::format("{} {} in {}: not {} after {:.0f} s ({})", action, s.model, s.job_name, want,
                                timeout_s, state.is_ok() ? *state : state.status().message()));
    }
    if (!sleep_ns(poll_ns_)) {
      return Status(ErrorCode::kCancelled, fmt::format("cluster stopping during {} of {}", action, s.model));
    }
  }
}

Status SlurmReplicaHost::ensure_active(fleet::ModelIndex m, const std::string& host, bool* moved) {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  if (moved != nullptr) *moved = false;
  auto state = replica_model_state(host, s.port, s.model);
  if (!state.is_ok()) return state.status().with_context(s.job_name);
  if (*state == "active") return Status::ok();
  if (moved != nullptr) *moved = true;
  const int64_t left = std::max<int64_t>(1'000'000'000, ready_timeout_ns_);
  if (*state == "suspended") return admin_move(m, host, "resume", "active", left);
  return admin_move(m, host, "load", "active", left);
}

bool SlurmReplicaHost::keep_on_suspend(fleet::ModelIndex m, std::string* why) const {
  if (options_.suspend == SuspendMode::kRelease) {
    *why = "suspend mode release";
    return false;
  }
  if (options_.suspend == SuspendMode::kKeep) {
    *why = "suspend mode keep";
    return true;
  }
  const ReplicaMeasures r = measured(m);
  if (r.cold_starts == 0) {
    *why = "auto: no cold start measured yet (an adopted job): keep";
    return true;
  }
  if (r.cold_start_s <= 0.5 * options_.ttft_slo_s) {
    *why = fmt::format("auto: measured cold start {:.2f} s is within half the {:.2f} s TTFT SLO: release",
                       r.cold_start_s, options_.ttft_slo_s);
    return false;
  }
  if (r.resumes_in_place == 0) {
    *why = fmt::format("auto: measured cold start {:.2f} s, no in-place resume measured yet: keep",
                       r.cold_start_s);
    return true;
  }
  const bool keep = r.resume_s <= options_.keep_ratio * r.cold_start_s;
  *why = fmt::format("auto: measured in-place resume {:.3f} s vs cold start {:.2f} s (keep at <= {:.2f}x): {}",
                     r.resume_s, r.cold_start_s, options_.keep_ratio, keep ? "keep" : "release");
  return keep;
}

std::optional<Status> SlurmReplicaHost::bring_up_in_place(fleet::ModelIndex m, int64_t t0_ns,
                                                          std::unique_lock<std::mutex>& lock) {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  SlotState& ss = state_[static_cast<size_t>(m)];
  const int32_t j = ss.job;
  const int64_t job = jobs_[static_cast<size_t>(j)].id;
  const std::string host = jobs_[static_cast<size_t>(j)].host;
  const bool was_kept = ss.measures.kept;
  lock.unlock();
  bool moved = false;
  Status st = ensure_active(m, host, &moved);
  lock.lock();
  if (st.is_ok()) {
    ss.measures.kept = false;
    ss.up = true;
    const int64_t took_ns = clock_->now_ns() - t0_ns;
    if (was_kept || moved) {
      ss.resume_sum_ns += took_ns;
      ++ss.measures.resumes_in_place;
      ss.measures.resume_s =
          static_cast<double>(ss.resume_sum_ns) * 1e-9 / static_cast<double>(ss.measures.resumes_in_place);
    }
    lock.unlock();
    log_info("cluster: {} up in place in job {} in {:.3f} s", s.model, job, static_cast<double>(took_ns) * 1e-9);
    return Status::ok();
  }
  ss.measures.kept = false;
  if (st.code() == ErrorCode::kCancelled || others_hold_locked(m, false)) {
    lock.unlock();
    return st;  // the job stays for its other models; this slot fails (retried after back-off)
  }
  lock.unlock();
  log_warn("cluster: {} did not come up in place in job {} ({}); releasing it for a cold start",
           s.model, job, st.message());
  (void)release(j, job, clock_->now_ns());
  return std::nullopt;
}

Status SlurmReplicaHost::bring_up(fleet::ModelIndex m) {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  const int64_t t0 = clock_->now_ns();
  SlotState& ss = state_[static_cast<size_t>(m)];  // the vectors never change size
  const int32_t j = ss.job;
  JobState& js = jobs_[static_cast<size_t>(j)];
  {
    std::lock_guard<std::mutex> l(mu_);
    ss.bringing = true;
  }
  struct Done {  // clears `bringing` however this ends (after `lock` below is gone)
    SlurmReplicaHost* h;
    SlotState* ss;
    ~Done() {
      std::lock_guard<std::mutex> l(h->mu_);
      ss->bringing = false;
    }
  } done{this, &ss};
  std::unique_lock<std::mutex> lock(mu_);
  if (!claim_job_locked(lock, j)) {
    return Status(ErrorCode::kCancelled, fmt::format("cluster stopping while {} started", s.model));
  }
  if (js.id != 0 && js.running) {
    // The job runs (kept, or serving another of its models): bring the model up in place.
    if (std::optional<Status> st = bring_up_in_place(m, t0, lock)) {
      release_job_claim(j);
      return *st;
    }
  } else {
    lock.unlock();
  }
  Status st = cold_start(m, t0);
  release_job_claim(j);
  return st;
}

Status SlurmReplicaHost::cold_start(fleet::ModelIndex m, int64_t t0_ns) {
  auto started = adopt_or_submit(m);
  if (!started.is_ok()) return started.status();
  const int32_t j = state_[static_cast<size_t>(m)].job;  // fixed at construction
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[static_cast<size_t>(j)].id = started->job;
    jobs_[static_cast<size_t>(j)].running = false;
    for (fleet::ModelIndex o : jobs_[static_cast<size_t>(j)].members) {
      state_[static_cast<size_t>(o)].up = false;
      state_[static_cast<size_t>(o)].measures.kept = false;
    }
  }
  return wait_ready(m, *started, t0_ns);
}

Result<SlurmJobSpec> SlurmReplicaHost::job_spec(fleet::ModelIndex m) const {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  const int32_t j = state_[static_cast<size_t>(m)].job;
  SlurmJobSpec spec;
  spec.name = jobs_[static_cast<size_t>(j)].name;
  spec.cpus = s.cpus;
  spec.memory_mb = s.memory_mb;
  spec.partition = options_.partition;
  spec.output = log_path(s);
  if (fleet_mode(m)) {
    // A fleet of the job's models: the controller alone suspends and resumes them. (The config
    // reads only what never changes: no lock.)
    auto config = write_config(j);
    if (!config.is_ok()) return config.status();
    spec.argv = {options_.tessera_bin, "serve", "--config", *config, "--idle-policy", "always-on"};
  } else {
    spec.argv = {options_.tessera_bin, "serve", "--model", s.path, "--name", s.model};
  }
  for (const std::string& a : {std::string("--host"), std::string("0.0.0.0"), std::string("--port"),
                               std::to_string(s.port), std::string("--threads"), std::to_string(s.cpus)}) {
    spec.argv.push_back(a);
  }
  spec.argv.insert(spec.argv.end(), options_.serve_args.begin(), options_.serve_args.end());
  return spec;
}

Result<SlurmReplicaHost::JobStart> SlurmReplicaHost::adopt_or_submit(fleet::ModelIndex m) {
  const std::string& job_name = jobs_[static_cast<size_t>(state_[static_cast<size_t>(m)].job)].name;
  // Adopt the job when Slurm still has it (a restarted controller); else submit one.
  JobStart out;
  auto listed = slurm_->jobs(job_name);
  if (!listed.is_ok()) return listed.status();
  for (const SlurmJob& sj : *listed) {
    if (sj.name == job_name && sj.state != SlurmJobState::kEnded && sj.state != SlurmJobState::kCompleting) {
      out.job = sj.id;
      out.node = sj.node;
    }
  }
  if (out.job != 0) {
    log_info("cluster: {} adopts running Slurm job {}", job_name, out.job);
    return out;
  }
  auto spec = job_spec(m);
  if (!spec.is_ok()) return spec.status();
  auto submitted = slurm_->submit(*spec);
  if (!submitted.is_ok()) return submitted.status().with_context("submitting " + job_name);
  out.job = *submitted;
  out.submitted = true;
  log_info("cluster: {} submitted as Slurm job {}", job_name, out.job);
  return out;
}

Result<bool> SlurmReplicaHost::job_alive(const std::string& job_name, int64_t job, std::string* node) {
  auto listed = slurm_->jobs(job_name);
  if (!listed.is_ok()) return listed.status();
  bool alive = false;
  for (const SlurmJob& sj : *listed) {
    if (sj.id == job && sj.state != SlurmJobState::kEnded) {
      alive = true;
      *node = sj.node;
    }
  }
  return alive;
}

Status SlurmReplicaHost::replica_answered(fleet::ModelIndex m, const std::string& host, const JobStart& start,
                                          int64_t t0_ns) {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  const int32_t j = state_[static_cast<size_t>(m)].job;
  const std::string& job_name = jobs_[static_cast<size_t>(j)].name;
  // A fleet-mode replica may hold the model suspended (kept by the last controller) or not
  // loaded yet.
  if (fleet_mode(m)) {
    if (Status st = ensure_active(m, host); !st.is_ok()) {
      (void)slurm_->cancel(start.job);
      return st.with_context(fmt::format("replica {} (Slurm job {}) answers but model {} is not active; "
                                         "cancelled", job_name, start.job, s.model));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  JobState& js = jobs_[static_cast<size_t>(j)];
  js.host = host;
  js.running = true;
  state_[static_cast<size_t>(m)].up = true;
  const int64_t took_ns = clock_->now_ns() - t0_ns;
  if (start.submitted) {
    js.cold_sum_ns += took_ns;
    ++js.cold_starts;
  }
  log_info("cluster: {} (job {}) ready in {:.2f} s", job_name, start.job, static_cast<double>(took_ns) * 1e-9);
  return Status::ok();
}

Status SlurmReplicaHost::wait_ready(fleet::ModelIndex m, JobStart start, int64_t t0_ns) {
  constexpr int64_t kSlurmCheckNs = 500'000'000;  // how often Slurm is asked whether the job lives
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  const int32_t j = state_[static_cast<size_t>(m)].job;
  const std::string& job_name = jobs_[static_cast<size_t>(j)].name;
  const int64_t job = start.job;
  auto forget = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[static_cast<size_t>(j)].id = 0;
    jobs_[static_cast<size_t>(j)].running = false;
  };
  int64_t next_check = clock_->now_ns() + kSlurmCheckNs;
  const std::string here = short_hostname();
  std::string node = start.node, host, resolved_node;
  while (true) {
    if (node != resolved_node || host.empty()) {  // resolve once per node seen
      host = replica_address(node, here);
      resolved_node = node;
    }
    auto health = upstream_get(host, s.port, "/health", 1.0);
    if (health.is_ok() && health->status == 200) {
      Status st = replica_answered(m, host, start, t0_ns);
      if (!st.is_ok()) forget();
      return st;
    }
    if (clock_->now_ns() >= next_check) {
      next_check = clock_->now_ns() + kSlurmCheckNs;
      auto alive = job_alive(job_name, job, &node);
      if (alive.is_ok() && !*alive) {
        forget();
        return Status(ErrorCode::kUnavailable,
                      fmt::format("replica {} (Slurm job {}) ended before it was ready; {}",
                                  job_name, job, log_tail(s)));
      }
    }
    if (clock_->now_ns() - t0_ns > ready_timeout_ns_) {
      (void)slurm_->cancel(job);
      forget();
      return Status(ErrorCode::kDeadlineExceeded,
                    fmt::format("replica {} (Slurm job {}) not ready after {:.0f} s; cancelled; {}",
                                job_name, job, options_.ready_timeout_s, log_tail(s)));
    }
    if (!sleep_ns(poll_ns_)) {
      return Status(ErrorCode::kCancelled, fmt::format("cluster stopping while {} started", job_name));
    }
  }
}

Status SlurmReplicaHost::take_down(fleet::ModelIndex m) {
  const ReplicaSlot& s = slots_[static_cast<size_t>(m)];
  // Drain: the requests already forwarded finish (or fail) first; none is cut off.
  constexpr int64_t kDrainPollNs = 20'000'000;
  const int64_t t0 = clock_->now_ns();
  while (callbacks_.in_flight(m) > 0 && clock_->now_ns() - t0 < drain_timeout_ns_) {
    if (!sleep_ns(kDrainPollNs)) break;
  }
  std::unique_lock<std::mutex> lock(mu_);
  const int32_t j = state_[static_cast<size_t>(m)].job;
  state_[static_cast<size_t>(m)].up = false;
  if (!claim_job_locked(lock, j)) return Status(ErrorCode::kCancelled, "cluster stopping");
  const int64_t job = jobs_[static_cast<size_t>(j)].id;
  const std::string host = jobs_[static_cast<size_t>(j)].host;
  const bool shared = others_hold_locked(m, false);
  lock.unlock();
  if (job == 0) {
    release_job_claim(j);
    return Status::ok();
  }
  std::string why;
  const bool keep = shared ? (why = "the job serves other models: suspend in place", true)
                           : keep_on_suspend(m, &why);
  if (keep) {
    Status st = admin_move(m, host, "suspend", "suspended", drain_timeout_ns_ + kReleaseGraceNs);
    if (st.is_ok() || st.code() == ErrorCode::kCancelled || shared) {
      lock.lock();
      SlotState& ss = state_[static_cast<size_t>(m)];
      if (st.is_ok()) {
        ss.measures.kept = true;
        ++ss.measures.kept_downs;
        ss.measures.last_down = why;
      }
      lock.unlock();
      release_job_claim(j);
      if (st.is_ok()) log_info("cluster: {} suspended in place in job {}, job kept ({})", s.model, job, why);
      return st;
    }
    why = fmt::format("the in-place suspend failed ({}): release", st.message());
    log_warn("cluster: {} (job {}): {}", s.model, job, why);
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    SlotState& ss = state_[static_cast<size_t>(m)];
    ++ss.measures.released_downs;
    ss.measures.last_down = why;
  }
  Status st = release(j, job, t0);
  release_job_claim(j);
  return st;
}

Status SlurmReplicaHost::release(int32_t j, int64_t job, int64_t since_ns) {
  const std::string job_name = jobs_[static_cast<size_t>(j)].name;
  if (Status st = slurm_->cancel(job); !st.is_ok()) return st.with_context("releasing " + job_name);
  // Wait until Slurm no longer runs it, so its port and CPUs are free for the next start.
  while (clock_->now_ns() - since_ns < drain_timeout_ns_ + kReleaseGraceNs) {
    auto listed = slurm_->jobs(job_name);
    bool running = false;
    if (listed.is_ok()) {
      for (const SlurmJob& sj : *listed) running |= sj.id == job && sj.state != SlurmJobState::kEnded;
    }
    if (listed.is_ok() && !running) break;
    if (!sleep_ns(kReleasePollNs)) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  JobState& js = jobs_[static_cast<size_t>(j)];
  if (js.id == job) {
    js.id = 0;
    js.running = false;
  }
  for (fleet::ModelIndex o : js.members) state_[static_cast<size_t>(o)].measures.kept = false;
  log_info("cluster: {} (job {}) released", job_name, job);
  return Status::ok();
}

Status SlurmReplicaHost::dispatch(fleet::ModelIndex m, engine::RequestId id) {
  std::string host;
  {
    std::lock_guard<std::mutex> lock(mu_);
    host = jobs_[static_cast<size_t>(state_[static_cast<size_t>(m)].job)].host;
  }
  callbacks_.forward(m, id, host, slots_[static_cast<size_t>(m)].port);
  return Status::ok();
}

void SlurmReplicaHost::reject(fleet::ModelIndex m, engine::RequestId id, const Status& why) {
  callbacks_.reject(m, id, why);
}

fleet::ModelCosts SlurmReplicaHost::costs(fleet::ModelIndex m) const {
  const ReplicaMeasures r = measured(m);
  fleet::ModelCosts c;
  // A kept job holds its memory allocation (a shared job's is counted once per kept model: an
  // upper bound); a released replica holds nothing.
  c.host_bytes = r.kept ? slots_[static_cast<size_t>(m)].memory_mb << 20 : 0;
  c.reload_estimate_s = r.cold_start_s > 0 ? r.cold_start_s : 5.0;
  c.resume_estimate_s = r.kept ? (r.resume_s > 0 ? r.resume_s : 0.5) : c.reload_estimate_s;
  return c;
}

std::vector<fleet::ModelIndex> SlurmReplicaHost::reconcile(const std::vector<SlurmJob>& jobs) {
  std::vector<fleet::ModelIndex> lost;
  std::lock_guard<std::mutex> lock(mu_);
  for (JobState& js : jobs_) {
    if (js.id == 0 || !js.running || js.busy) continue;
    bool alive = false;
    for (const SlurmJob& sj : jobs) alive |= sj.id == js.id && sj.state == SlurmJobState::kRunning;
    if (alive) continue;
    // The job went away (scancel, kill, node failure): its up models are lost, its kept ones
    // forgotten (their next start is cold).
    log_warn("cluster: job {} ({}) is gone", js.id, js.name);
    js.id = 0;
    js.running = false;
    for (fleet::ModelIndex o : js.members) {
      SlotState& ss = state_[static_cast<size_t>(o)];
      ss.measures.kept = false;
      if (ss.up) {
        ss.up = false;
        lost.push_back(o);
      }
    }
  }
  return lost;
}

}  // namespace tessera::cluster
