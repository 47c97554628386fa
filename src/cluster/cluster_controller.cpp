#include "tessera/cluster/cluster_controller.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "tessera/base/clock.h"
#include "tessera/base/log.h"
#include "tessera/cluster/dashboard_page.h"
#include "tessera/cluster/prefix_affinity.h"
#include "tessera/cluster/upstream_call.h"
#include "tessera/fleet/fleet_controller.h"
#include "tessera/fleet/idle_policy.h"
#include "tessera/fleet/keep_alive_policy.h"
#include "tessera/fleet/replica_choice.h"
#include "tessera/serve/api_error.h"
#include "tessera/serve/json_util.h"

namespace tessera::cluster {
namespace {

using fleet::ModelIndex;
using fleet::ModelState;
using json = nlohmann::json;

constexpr int kMaxTries = 3;

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

bool holds_replica(ModelState s) {
  return s == ModelState::kLoading || s == ModelState::kActive || s == ModelState::kSuspending ||
         s == ModelState::kResuming;
}

// The text whose prefix a replica's prefix cache would hold: the prompt (text or token ids; of a
// batch of token-id prompts, the first), or the chat messages in order.
std::string prefix_text(const json& body) {
  std::string text;
  auto add = [&](const auto& self, const json& v, int depth = 0) -> void {
    if (v.is_string()) {
      text += v.get<std::string>();
    } else if (v.is_array()) {
      for (const auto& part : v) {
        if (part.is_string()) text += part.get<std::string>();
        // A prompt of token ids: the ids themselves, fixed width, so equal prefixes of ids are
        // equal prefixes of text.
        if (part.is_number_integer()) text += fmt::format("{:08x}", part.get<int64_t>() & 0xffffffff);
        if (part.is_object() && part.contains("text") && part["text"].is_string()) {
          text += part["text"].get<std::string>();
        }
        // A batch of token-id prompts ([[ids], [ids]]): keyed by the first (one level only: a
        // hostile body nests arrays deeper than any stack).
        if (part.is_array() && depth == 0) {
          self(self, part, 1);
          break;
        }
      }
    }
  };
  if (auto it = body.find("messages"); it != body.end() && it->is_array()) {
    for (const auto& msg : *it) {
      if (!msg.is_object()) continue;
      if (auto r = msg.find("role"); r != msg.end() && r->is_string()) text += r->get<std::string>();
      text += '\n';
      if (auto c = msg.find("content"); c != msg.end()) add(add, *c);
      text += '\n';
    }
  } else if (auto p = body.find("prompt"); p != body.end()) {
    add(add, *p);
  } else if (auto in = body.find("input"); in != body.end()) {
    add(add, *in);
  }
  return text;
}

void respond_error(const std::shared_ptr<serve::ResponseWriter>& w, const Status& st,
                   std::string param = {}) {
  auto e = serve::api_error_from_status(st, std::move(param));
  w->respond(serve::api_error_response(e));
}

}  // namespace

Result<RoutingPolicy> routing_policy_from_name(const std::string& name) {
  if (name == "prefix") return RoutingPolicy::kPrefix;
  if (name == "least-loaded") return RoutingPolicy::kLeastLoaded;
  if (name == "round-robin") return RoutingPolicy::kRoundRobin;
  return invalid_argument(
      fmt::format("unknown routing policy '{}': expected prefix, least-loaded or round-robin", name));
}

struct ClusterController::Impl final : fleet::Timer {
  struct Pending {
    int32_t model = 0;
    ModelIndex slot = -1;
    serve::HttpRequest request;
    std::shared_ptr<serve::ResponseWriter> writer;
    std::string text;  // for prefix affinity
    int64_t arrived_ns = 0;
    int tries = 0;
    bool waited_for_replica = false;  // queued while a replica came up (a cold start)
  };
  struct ModelStats {
    int64_t requests = 0, answered = 0, failed = 0, refused = 0, retries = 0, slo_met = 0;
    int64_t scale_ups = 0, scale_downs = 0, lost = 0, affinity_routed = 0;
    int64_t slo_scaled_routes = 0;  // routed with the cap halved by SLO misses
    double replica_s = 0.0, idle_replica_s = 0.0;
    double kept_s = 0.0;            // seconds jobs were kept with their model suspended
    std::deque<std::pair<int64_t, bool>> recent;  // (answered at, TTFT within SLO), newest last
  };

  ClusterOptions o;
  std::unique_ptr<SlurmClient> slurm;
  const Clock* clock = real_clock();
  std::vector<ReplicaSlot> slots;
  std::vector<int32_t> slot_model;                 // slot -> model
  std::vector<std::vector<ModelIndex>> model_slots;
  std::vector<int32_t> in_flight;                  // per slot: routed, not finished
  std::vector<int32_t> forwarding;                 // per slot: proxy threads running
  std::vector<PrefixAffinity> affinity;            // per model
  std::vector<size_t> rr_next;                     // per model
  std::vector<ModelStats> stats;                   // per model
  std::unique_ptr<SlurmReplicaHost> host;
  std::unique_ptr<fleet::FleetController> ctl;

  mutable std::mutex mu;
  std::condition_variable cv;        // control thread wake-ups
  std::condition_variable idle_cv;   // forwarding_total reached 0
  int64_t wake_ns = std::numeric_limits<int64_t>::max();
  bool started = false, stopping = false;
  std::thread control;
  std::unordered_map<engine::RequestId, Pending> pending;
  engine::RequestId next_id = 1;
  int forwarding_total = 0;
  int64_t last_sample_ns = 0;

  // fleet::Timer; called under mu (from inside controller calls).
  void wake_at(int64_t at_ns) override {
    if (at_ns < wake_ns) {
      wake_ns = at_ns;
      cv.notify_all();
    }
  }

  void route_locked(engine::RequestId old_id, Pending p);
  void forward_locked(ModelIndex slot, engine::RequestId id, const std::string& host, int port);
  void run_forward(ModelIndex slot, engine::RequestId id, std::string host, int port);
  void sample_locked(int64_t now);
  // Whether model `mi` missed its TTFT SLO lately (any of its last slo_window answers within
  // the last 60 s came late).
  bool slo_pressure_locked(int32_t mi, int64_t now) const;
  // Kept jobs suspended longer than release_kept_after_s are released.
  void release_kept_locked(int64_t now);
  void control_loop();
  void mark_lost_locked(ModelIndex slot, const std::string& why);
};

ClusterController::ClusterController(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClusterController::~ClusterController() { stop(false); }

Result<std::unique_ptr<ClusterController>> ClusterController::create(ClusterOptions options,
                                                                     std::unique_ptr<SlurmClient> slurm) {
  if (options.models.empty()) return invalid_argument("a cluster needs at least one model");
  if (!valid_name(options.name)) {
    return invalid_argument(fmt::format("cluster name '{}': use 1-64 of [A-Za-z0-9._-]", options.name));
  }
  if (slurm == nullptr) return invalid_argument("no Slurm client");
  auto impl = std::make_unique<Impl>();
  std::vector<fleet::ControlledModel> entries;
  std::shared_ptr<const fleet::IdlePolicy> policy;
  if (options.keep_alive_s < 0 || options.idle_policy == "always-on") {
    policy = std::make_shared<fleet::FixedKeepAlivePolicy>(fleet::FixedKeepAlivePolicy::always_on());
  } else {
    auto made = fleet::make_idle_policy({options.idle_policy, options.keep_alive_s});
    if (!made.is_ok()) return made.status().with_context("idle policy");
    policy = std::move(made).value();
  }
  if (options.slo_window < 0 || options.slo_window > 1024) {
    return invalid_argument(fmt::format("SLO window {} outside 0..1024", options.slo_window));
  }
  // Co-located models share replica jobs: group[mi] is the first model of mi's group.
  std::vector<size_t> group(options.models.size());
  for (size_t mi = 0; mi < group.size(); ++mi) group[mi] = mi;
  std::vector<bool> grouped(options.models.size(), false);
  for (const auto& names : options.colocate) {
    if (names.size() < 2) return invalid_argument("a co-located group needs at least two models");
    std::vector<size_t> members;
    for (const std::string& name : names) {
      size_t found = options.models.size();
      for (size_t mi = 0; mi < options.models.size(); ++mi) {
        if (options.models[mi].name == name) found = mi;
      }
      if (found == options.models.size()) {
        return invalid_argument(fmt::format("co-located model '{}' is not one of the cluster's models", name));
      }
      if (grouped[found]) return invalid_argument(fmt::format("model '{}' is in two co-located groups", name));
      grouped[found] = true;
      members.push_back(found);
    }
    const size_t first = *std::min_element(members.begin(), members.end());
    for (size_t mi : members) {
      if (options.models[mi].max_replicas != options.models[first].max_replicas) {
        return invalid_argument(fmt::format("co-located models '{}' and '{}' need equal max replicas",
                                            options.models[first].name, options.models[mi].name));
      }
      group[mi] = first;
    }
  }
  // A job's port, name, CPUs (its members' most) and memory (their sum), per (group, replica).
  struct JobSpec {
    int port = 0;
    std::string name;
    int cpus = 1;
    int64_t memory_mb = 0;
  };
  std::map<std::pair<size_t, int32_t>, JobSpec> job_specs;
  std::vector<int64_t> file_bytes(options.models.size(), 0);  // each model file's size
  for (size_t mi = 0; mi < options.models.size(); ++mi) {
    struct stat st {};
    if (::stat(options.models[mi].path.c_str(), &st) == 0) file_bytes[mi] = static_cast<int64_t>(st.st_size);
  }
  auto model_memory_mb = [&](size_t mi) {
    const int64_t given = options.models[mi].memory_mb;
    return given > 0 ? given : (2 * file_bytes[mi] >> 20) + 256;
  };
  int port = options.replica_port_base;
  for (size_t mi = 0; mi < options.models.size(); ++mi) {
    for (int32_t k = 0; k < options.models[mi].max_replicas; ++k) {
      JobSpec& js = job_specs[{group[mi], k}];
      if (js.port == 0) {
        js.port = port++;
        std::string members;
        for (size_t mj = 0; mj < options.models.size(); ++mj) {
          if (group[mj] == group[mi]) members += (members.empty() ? "" : "+") + options.models[mj].name;
        }
        js.name = fmt::format("{}-{}-{}", options.name, members, k);
      }
      js.cpus = std::max(js.cpus, options.models[mi].cpus);
      js.memory_mb += model_memory_mb(mi);
    }
  }
  for (size_t mi = 0; mi < options.models.size(); ++mi) {
    const ClusterModelSpec& spec = options.models[mi];
    if (!valid_name(spec.name)) {
      return invalid_argument(fmt::format("model name '{}': use 1-64 of [A-Za-z0-9._-]", spec.name));
    }
    for (size_t mj = 0; mj < mi; ++mj) {
      if (options.models[mj].name == spec.name) {
        return invalid_argument(fmt::format("model '{}' given twice", spec.name));
      }
    }
    if (spec.max_replicas < 1 || spec.max_replicas > PrefixAffinity::kMaxReplicas) {
      return invalid_argument(fmt::format("model '{}': max replicas {} outside 1..{}", spec.name,
                                          spec.max_replicas, PrefixAffinity::kMaxReplicas));
    }
    if (spec.min_replicas < 0 || spec.min_replicas > spec.max_replicas) {
      return invalid_argument(fmt::format("model '{}': min replicas {} outside 0..{}", spec.name,
                                          spec.min_replicas, spec.max_replicas));
    }
    impl->model_slots.emplace_back();
    for (int32_t k = 0; k < spec.max_replicas; ++k) {
      const JobSpec& js = job_specs.at({group[mi], k});
      if (js.port < 1 || js.port > 65535) {
        return invalid_argument(fmt::format("replica port {} outside 1..65535", js.port));
      }
      ReplicaSlot s;
      s.model = spec.name;
      s.path = spec.path;
      s.replica = k;
      s.port = js.port;
      s.cpus = std::max(1, js.cpus);
      s.memory_mb = js.memory_mb;
      s.job_name = js.name;
      impl->model_slots.back().push_back(static_cast<ModelIndex>(impl->slots.size()));
      impl->slot_model.push_back(static_cast<int32_t>(mi));
      fleet::ControlledModel cm;
      cm.name = fmt::format("{}#{}", spec.name, k);
      cm.active_bytes = s.memory_mb << 20;
      cm.weight_bytes = file_bytes[mi];
      cm.idle_policy = policy;
      cm.pinned = k < spec.min_replicas;
      cm.ttft_slo_ns = static_cast<int64_t>(options.ttft_slo_s * 1e9);
      entries.push_back(std::move(cm));
      impl->slots.push_back(std::move(s));
    }
    impl->affinity.emplace_back(options.prefix_block_chars);
  }
  const size_t n = impl->slots.size();
  impl->in_flight.assign(n, 0);
  impl->forwarding.assign(n, 0);
  impl->rr_next.assign(options.models.size(), 0);
  impl->stats.assign(options.models.size(), {});
  impl->slurm = std::move(slurm);

  Impl* raw = impl.get();
  SlurmReplicaHost::Callbacks cb;
  cb.move_done = [raw](ModelIndex m, const Status& st) {
    std::lock_guard<std::mutex> lock(raw->mu);
    raw->ctl->move_done(m, st);
  };
  cb.forward = [raw](ModelIndex m, engine::RequestId id, const std::string& h, int p) {
    raw->forward_locked(m, id, h, p);
  };
  cb.reject = [raw](ModelIndex m, engine::RequestId id, const Status& why) {
    auto it = raw->pending.find(id);
    if (it == raw->pending.end()) return;
    --raw->in_flight[static_cast<size_t>(m)];
    ++raw->stats[static_cast<size_t>(it->second.model)].failed;
    respond_error(it->second.writer, why);
    raw->pending.erase(it);
  };
  cb.in_flight = [raw](ModelIndex m) {
    std::lock_guard<std::mutex> lock(raw->mu);
    return raw->forwarding[static_cast<size_t>(m)];
  };
  ReplicaHostOptions host_options = options.host;
  host_options.ttft_slo_s = options.ttft_slo_s;
  impl->host = std::make_unique<SlurmReplicaHost>(impl->slots, host_options, impl->slurm.get(), std::move(cb));

  fleet::ControllerOptions co;
  co.idle_policy = policy;
  co.host_budget_bytes = options.kept_memory_mb > 0 ? options.kept_memory_mb << 20 : 0;
  co.request_deadline_ns = static_cast<int64_t>(options.request_deadline_s * 1e9);
  co.retry_backoff_ns = 2'000'000'000;
  co.max_retry_backoff_ns = 60'000'000'000;
  impl->o = std::move(options);
  auto ctl = fleet::FleetController::create(std::move(entries), co, impl->host.get(), impl->clock, raw);
  if (!ctl.is_ok()) return ctl.status();
  impl->ctl = std::move(*ctl);
  impl->ctl->add_listener([raw](const fleet::TransitionEvent& e) {
    // "<model>#k": count scale events per model.
    const std::string model = e.model.substr(0, e.model.rfind('#'));
    for (size_t mi = 0; mi < raw->o.models.size(); ++mi) {
      if (raw->o.models[mi].name != model) continue;
      if (e.to == ModelState::kLoading || e.to == ModelState::kResuming) ++raw->stats[mi].scale_ups;
      if (e.to == ModelState::kSuspending) ++raw->stats[mi].scale_downs;
      log_info("cluster: {} {} -> {} ({})", e.model, fleet::model_state_name(e.from),
               fleet::model_state_name(e.to), e.reason);
    }
  });
  return std::unique_ptr<ClusterController>(new ClusterController(std::move(impl)));
}

Status ClusterController::start() {
  Impl& d = *impl_;
  auto jobs = d.slurm->jobs(d.o.name + "-");
  if (!jobs.is_ok()) return jobs.status().with_context("reading Slurm's jobs");
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.started) return internal_error("cluster controller started twice");
  d.started = true;
  d.last_sample_ns = d.clock->now_ns();
  // Adopt: a slot whose job Slurm still runs comes up through a load that finds the job. The
  // minimum replicas come up too.
  for (size_t i = 0; i < d.slots.size(); ++i) {
    bool adopt = false;
    for (const SlurmJob& j : *jobs) {
      adopt |= j.name == d.slots[i].job_name &&
               (j.state == SlurmJobState::kRunning || j.state == SlurmJobState::kPending);
    }
    const auto m = static_cast<ModelIndex>(i);
    if (adopt) {
      (void)d.ctl->load(m, "adopt running Slurm job");
    } else if (d.ctl->model(m).pinned) {
      (void)d.ctl->load(m, "min replicas");
    }
  }
  d.control = std::thread([&d] { d.control_loop(); });
  return Status::ok();
}

void ClusterController::stop(bool release_replicas) {
  Impl& d = *impl_;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (d.stopping) return;
    d.stopping = true;
  }
  d.cv.notify_all();
  if (d.control.joinable()) d.control.join();
  d.host->stop();
  std::unique_lock<std::mutex> lock(d.mu);
  d.ctl->refuse_all_queued(Status(ErrorCode::kUnavailable, "the cluster controller is stopping"));
  d.idle_cv.wait(lock, [&] { return d.forwarding_total == 0; });
  if (release_replicas) {
    lock.unlock();
    auto jobs = d.slurm->jobs(d.o.name + "-");
    if (jobs.is_ok()) {
      for (const SlurmJob& j : *jobs) {
        if (j.state != SlurmJobState::kEnded) (void)d.slurm->cancel(j.id);
      }
    }
  }
}

void ClusterController::Impl::sample_locked(int64_t now) {
  const double dt = static_cast<double>(now - last_sample_ns) * 1e-9;
  last_sample_ns = now;
  if (dt <= 0) return;
  for (size_t i = 0; i < slots.size(); ++i) {
    const ModelState s = ctl->state(static_cast<ModelIndex>(i));
    ModelStats& ms = stats[static_cast<size_t>(slot_model[i])];
    if (s == ModelState::kSuspended && host->kept(static_cast<ModelIndex>(i))) ms.kept_s += dt;
    if (!holds_replica(s)) continue;
    ms.replica_s += dt;
    if (s == ModelState::kActive && in_flight[i] == 0) ms.idle_replica_s += dt;
  }
}

bool ClusterController::Impl::slo_pressure_locked(int32_t mi, int64_t now) const {
  if (o.slo_window <= 0) return false;
  for (const auto& [at, met] : stats[static_cast<size_t>(mi)].recent) {
    if (!met && now - at <= 60'000'000'000) return true;
  }
  return false;
}

void ClusterController::Impl::release_kept_locked(int64_t now) {
  if (o.release_kept_after_s < 0) return;
  const auto after = static_cast<int64_t>(o.release_kept_after_s * 1e9);
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto m = static_cast<ModelIndex>(i);
    if (ctl->state(m) != ModelState::kSuspended || ctl->status(m).moving) continue;
    if (now - ctl->status(m).state_since_ns < after || !host->kept(m)) continue;
    (void)ctl->evict(m, fmt::format("kept {:.0f} s suspended", o.release_kept_after_s));
  }
}

void ClusterController::Impl::mark_lost_locked(ModelIndex slot, const std::string& why) {
  const int32_t mi = slot_model[static_cast<size_t>(slot)];
  affinity[static_cast<size_t>(mi)].forget(slots[static_cast<size_t>(slot)].replica);
  if (ctl->state(slot) == ModelState::kActive) {
    ++stats[static_cast<size_t>(mi)].lost;
    log_warn("cluster: {} lost: {}", slots[static_cast<size_t>(slot)].job_name, why);
    (void)ctl->suspend(slot, "replica lost: " + why);
  }
}

void ClusterController::Impl::control_loop() {
  const int64_t poll_ns = static_cast<int64_t>(o.slurm_poll_s * 1e9);
  int64_t next_poll = clock->now_ns() + poll_ns;
  std::unique_lock<std::mutex> lock(mu);
  while (!stopping) {
    const int64_t now = clock->now_ns();
    const int64_t until = std::min({wake_ns, next_poll, now + 200'000'000});
    cv.wait_for(lock, std::chrono::nanoseconds(std::max<int64_t>(until - now, 0)));
    if (stopping) break;
    const int64_t t = clock->now_ns();
    sample_locked(t);
    // Tick on every wake-up (the controller's own wish, a queued request, or the 200 ms beat
    // that samples usage): ticking early is always allowed and costs microseconds.
    wake_ns = std::numeric_limits<int64_t>::max();
    ctl->tick();
    release_kept_locked(t);
    wake_at(ctl->next_tick_ns());
    if (t >= next_poll) {
      next_poll = t + poll_ns;
      lock.unlock();
      auto jobs = slurm->jobs(o.name + "-");
      std::vector<ModelIndex> lost;
      if (jobs.is_ok()) lost = host->reconcile(*jobs);
      lock.lock();
      for (ModelIndex m : lost) mark_lost_locked(m, "its Slurm job is no longer running");
      // The minimum replicas come back when lost.
      for (size_t i = 0; i < slots.size(); ++i) {
        const auto m = static_cast<ModelIndex>(i);
        if (!ctl->model(m).pinned || ctl->status(m).moving) continue;
        const ModelState st = ctl->state(m);
        if (st == ModelState::kSuspended) (void)ctl->resume(m, "min replicas");
        if (st == ModelState::kUnloaded || st == ModelState::kEvicted) (void)ctl->load(m, "min replicas");
      }
    }
  }
}

void ClusterController::Impl::route_locked(engine::RequestId old_id, Pending p) {
  if (old_id != 0) pending.erase(old_id);
  const auto& ss = model_slots[static_cast<size_t>(p.model)];
  ModelStats& ms = stats[static_cast<size_t>(p.model)];
  int32_t cap = std::max(1, o.replica_cap);
  if (slo_pressure_locked(p.model, clock->now_ns())) {
    cap = std::max(1, cap / 2);
    ++ms.slo_scaled_routes;
  }
  std::vector<fleet::ReplicaSlotView> views(ss.size());
  std::vector<int32_t> match(ss.size(), 0);
  if (o.routing == RoutingPolicy::kPrefix) affinity[static_cast<size_t>(p.model)].match(p.text, match);
  for (size_t k = 0; k < ss.size(); ++k) {
    views[k] = {ctl->state(ss[k]), in_flight[static_cast<size_t>(ss[k])], match[k]};
  }
  int32_t k = -1;
  if (o.routing == RoutingPolicy::kRoundRobin) {
    size_t& next = rr_next[static_cast<size_t>(p.model)];
    for (size_t step = 0; step < ss.size() && k < 0; ++step) {
      const size_t c = (next + step) % ss.size();
      if (views[c].state == ModelState::kActive && views[c].in_flight < cap) {
        k = static_cast<int32_t>(c);
        next = c + 1;
      }
    }
  }
  if (k < 0) k = fleet::choose_replica(views, cap, fleet::ReplicaSpread::kSpread);
  const ModelIndex slot = ss[static_cast<size_t>(k)];
  if (match[static_cast<size_t>(k)] > 0) ++ms.affinity_routed;
  affinity[static_cast<size_t>(p.model)].record(p.text, k);
  p.slot = slot;
  ++p.tries;
  const engine::RequestId id = next_id++;
  auto writer = p.writer;
  pending.emplace(id, std::move(p));
  ++in_flight[static_cast<size_t>(slot)];
  Status why;
  switch (ctl->submit(slot, id, &why)) {
    case fleet::Admission::kDispatched:
      break;
    case fleet::Admission::kQueued:
      pending.at(id).waited_for_replica = true;
      // Bring the replica up now (a tick starts the wanted moves), so the next request sees it
      // Loading with this one counted, rather than Unloaded and free to take it too.
      ctl->tick();
      wake_at(ctl->next_tick_ns());
      break;
    case fleet::Admission::kRefused:
      --in_flight[static_cast<size_t>(slot)];
      ++ms.refused;
      pending.erase(id);
      respond_error(writer, why);
      break;
  }
}

void ClusterController::Impl::forward_locked(ModelIndex slot, engine::RequestId id,
                                             const std::string& h, int port) {
  if (pending.find(id) == pending.end()) return;
  ++forwarding[static_cast<size_t>(slot)];
  ++forwarding_total;
  std::thread([this, slot, id, h, port] { run_forward(slot, id, h, port); }).detach();
}

void ClusterController::Impl::run_forward(ModelIndex slot, engine::RequestId id, std::string h,
                                          int port) {
  UpstreamRequest req;
  std::shared_ptr<serve::ResponseWriter> writer;
  int64_t arrived = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    const Pending& p = pending.at(id);
    req.host = h;
    req.port = port;
    req.method = p.request.method;
    req.target = p.request.target;
    req.body = p.request.body;
    if (auto ct = p.request.header("Content-Type"); !ct.empty()) req.content_type = std::string(ct);
    if (auto auth = p.request.header("Authorization"); !auth.empty()) {
      req.headers.emplace_back("Authorization", std::string(auth));
    }
    writer = p.writer;
    arrived = p.arrived_ns;
  }
  bool busy = false;  // the replica answered 503: another may take it
  bool sse = false;
  int64_t first_byte_ns = -1;
  UpstreamStage stage = UpstreamStage::kNotSent;
  Status st = upstream_call(
      req,
      [&](const UpstreamHead& head) {
        if (head.status == 503) {
          busy = true;
          return;
        }
        sse = head.content_type.find("text/event-stream") != std::string::npos;
        writer->begin_stream(head.status, head.content_type.empty() ? "application/json" : head.content_type,
                             head.headers);
      },
      [&](std::string_view piece) {
        if (busy) return true;
        if (first_byte_ns < 0) first_byte_ns = clock->now_ns();
        return writer->write(std::string(piece));
      },
      &stage);
  const bool answered = stage >= UpstreamStage::kHead && !busy;
  if (answered) {
    if (!st.is_ok() && st.code() != ErrorCode::kCancelled && sse) {
      // The replica went away mid-stream: say so in the stream rather than end it silently.
      writer->write(fmt::format("data: {}\n\n", serve::dump_json(json{
                                                    {"error", {{"message", st.message()},
                                                               {"type", "unavailable_error"}}}})));
    }
    writer->end_stream();
  }
  std::lock_guard<std::mutex> lock(mu);
  --forwarding[static_cast<size_t>(slot)];
  --forwarding_total;
  auto it = pending.find(id);
  if (it != pending.end()) {
    Pending& p = it->second;
    ModelStats& ms = stats[static_cast<size_t>(p.model)];
    const bool slo = answered && first_byte_ns >= 0 &&
                     first_byte_ns - arrived <= static_cast<int64_t>(o.ttft_slo_s * 1e9);
    ctl->finished(slot, id, slo);
    --in_flight[static_cast<size_t>(slot)];
    if (answered) {
      ++ms.answered;
      if (slo) ++ms.slo_met;
      // A late answer that waited for a cold start says nothing about the replicas' load.
      if (!p.waited_for_replica) ms.recent.emplace_back(clock->now_ns(), slo);
      while (ms.recent.size() > static_cast<size_t>(std::max(o.slo_window, 0))) ms.recent.pop_front();
      pending.erase(it);
    } else if (p.tries < kMaxTries && !stopping && !writer->disconnected()) {
      // Not taken (unreachable, or busy): another replica gets it; the client sees one answer.
      ++ms.retries;
      if (!busy) mark_lost_locked(slot, st.message());
      route_locked(id, std::move(p));
    } else {
      ++ms.failed;
      respond_error(writer, busy ? Status(ErrorCode::kUnavailable, "every replica tried is busy")
                                 : st.with_context("no replica could take the request"));
      pending.erase(it);
    }
  }
  if (forwarding_total == 0) idle_cv.notify_all();
}

void ClusterController::handle(serve::HttpRequest&& request,
                               std::shared_ptr<serve::ResponseWriter> writer) {
  Impl& d = *impl_;
  const std::string& path = request.path;
  if (request.method == "GET" && path == "/health") {
    writer->respond({200, "application/json", {}, R"({"status":"ok"})"});
    return;
  }
  if (request.method == "GET" && path == "/metrics") {
    writer->respond({200, "text/plain; version=0.0.4", {}, metrics_text()});
    return;
  }
  if (request.method == "GET" && path == "/cluster/status") {
    writer->respond({200, "application/json", {}, serve::dump_json(status_json())});
    return;
  }
  if (request.method == "GET" && path == "/dashboard") {
    writer->respond({200, "text/html; charset=utf-8", {}, dashboard_html(d.o.chart_js)});
    return;
  }
  if (request.method == "GET" && path == "/cluster/targets") {
    writer->respond({200, "application/json", {}, serve::dump_json(prometheus_targets())});
    return;
  }
  if (request.method == "GET" && path == "/v1/models") {
    json data = json::array();
    for (const auto& m : d.o.models) {
      data.push_back({{"id", m.name}, {"object", "model"}, {"owned_by", "tessera"}, {"created", 0}});
    }
    writer->respond({200, "application/json", {}, serve::dump_json({{"object", "list"}, {"data", data}})});
    return;
  }
  const bool proxied = path == "/v1/completions" || path == "/v1/chat/completions" ||
                       path == "/v1/embeddings" || path == "/tokenize" || path == "/detokenize";
  if (!proxied) {
    respond_error(writer, not_found(fmt::format("no route {} {}", request.method, path)));
    return;
  }
  if (request.method != "POST") {
    writer->respond(serve::api_error_response(
        {405, "invalid_request_error", fmt::format("{} takes POST", path), "", "", 0}));
    return;
  }
  json body = json::parse(request.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    respond_error(writer, invalid_argument("the request body is not a JSON object"));
    return;
  }
  std::string model;
  if (auto it = body.find("model"); it != body.end() && it->is_string()) model = it->get<std::string>();
  int32_t mi = -1;
  for (size_t i = 0; i < d.o.models.size(); ++i) {
    if (d.o.models[i].name == model) mi = static_cast<int32_t>(i);
  }
  if (mi < 0 && model.empty() && d.o.models.size() == 1) mi = 0;
  if (mi < 0) {
    respond_error(writer,
                  not_found(fmt::format("model '{}' is not served here; GET /v1/models lists them", model)),
                  "model");
    return;
  }
  Impl::Pending p;
  p.model = mi;
  p.text = prefix_text(body);
  p.writer = writer;
  p.request = std::move(request);
  std::lock_guard<std::mutex> lock(d.mu);
  p.arrived_ns = d.clock->now_ns();
  ++d.stats[static_cast<size_t>(mi)].requests;
  if (d.stopping || !d.started) {
    respond_error(writer, Status(ErrorCode::kUnavailable, "the cluster controller is not running"));
    return;
  }
  if (d.forwarding_total >= d.o.max_forwarding) {
    ++d.stats[static_cast<size_t>(mi)].refused;
    respond_error(writer, resource_exhausted(fmt::format(
                              "{} requests are being proxied, the router's limit", d.forwarding_total)));
    return;
  }
  d.route_locked(0, std::move(p));
}

json ClusterController::status_json() const {
  const Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  json models = json::array();
  for (size_t mi = 0; mi < d.o.models.size(); ++mi) {
    const auto& st = d.stats[mi];
    json replicas = json::array();
    int up = 0;
    int64_t kept_released = 0;
    for (ModelIndex s : d.model_slots[mi]) {
      const ModelState state = d.ctl->state(s);
      up += holds_replica(state) ? 1 : 0;
      const auto cs = d.ctl->status(s);
      const ReplicaMeasures r = d.host->measured(s);
      kept_released += r.kept_released;
      replicas.push_back({{"slot", d.slots[static_cast<size_t>(s)].replica},
                          {"state", fleet::model_state_name(state)},
                          {"job", d.host->job_of(s)},
                          {"job_kept", r.kept},
                          {"port", d.slots[static_cast<size_t>(s)].port},
                          {"in_flight", d.in_flight[static_cast<size_t>(s)]},
                          {"cold_starts", r.cold_starts},
                          {"cold_start_s", r.cold_start_s},
                          {"resumes_in_place", r.resumes_in_place},
                          {"resume_in_place_s", r.resume_s},
                          {"kept_downs", r.kept_downs},
                          {"released_downs", r.released_downs},
                          {"last_down", r.last_down},
                          {"last_error", cs.last_error}});
    }
    models.push_back({{"name", d.o.models[mi].name},
                      {"replicas_up", up},
                      {"max_replicas", d.o.models[mi].max_replicas},
                      {"requests", st.requests},
                      {"answered", st.answered},
                      {"failed", st.failed},
                      {"refused", st.refused},
                      {"retries", st.retries},
                      {"slo_met", st.slo_met},
                      {"scale_ups", st.scale_ups},
                      {"scale_downs", st.scale_downs},
                      {"replicas_lost", st.lost},
                      {"affinity_routed", st.affinity_routed},
                      {"replica_seconds", st.replica_s},
                      {"idle_replica_seconds", st.idle_replica_s},
                      {"kept_replica_seconds", st.kept_s},
                      {"kept_released", kept_released},
                      {"slo_scaled_routes", st.slo_scaled_routes},
                      {"slo_pressure", d.slo_pressure_locked(static_cast<int32_t>(mi), d.clock->now_ns())},
                      {"replicas", replicas}});
  }
  const char* routing = d.o.routing == RoutingPolicy::kPrefix        ? "prefix"
                        : d.o.routing == RoutingPolicy::kLeastLoaded ? "least-loaded"
                                                                     : "round-robin";
  return {{"cluster", d.o.name},
          {"routing", routing},
          {"keep_alive_s", d.o.keep_alive_s},
          {"idle_policy", d.o.idle_policy},
          {"suspend", suspend_mode_name(d.o.host.suspend)},
          {"release_kept_after_s", d.o.release_kept_after_s},
          {"replica_cap", d.o.replica_cap},
          {"models", models}};
}

json ClusterController::prometheus_targets() const {
  const Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  json out = json::array();
  std::vector<int> ports;  // a shared (multi-model) job is one target
  for (size_t i = 0; i < d.slots.size(); ++i) {
    if (d.ctl->state(static_cast<ModelIndex>(i)) != ModelState::kActive) continue;
    const ReplicaSlot& s = d.slots[i];
    if (std::find(ports.begin(), ports.end(), s.port) != ports.end()) continue;
    ports.push_back(s.port);
    out.push_back({{"targets", {fmt::format("127.0.0.1:{}", s.port)}},
                   {"labels", {{"model", s.model}, {"replica", std::to_string(s.replica)},
                               {"slurm_job", std::to_string(d.host->job_of(static_cast<ModelIndex>(i)))}}}});
  }
  return out;
}

std::string ClusterController::metrics_text() const {
  const Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  family("tessera_cluster_replicas", "gauge", "Replica slots per model and state");
  for (size_t mi = 0; mi < d.o.models.size(); ++mi) {
    int counts[fleet::kNumModelStates] = {};
    for (ModelIndex s : d.model_slots[mi]) ++counts[static_cast<int>(d.ctl->state(s))];
    for (int k = 0; k < fleet::kNumModelStates; ++k) {
      out += fmt::format("tessera_cluster_replicas{{model=\"{}\",state=\"{}\"}} {}\n", d.o.models[mi].name,
                         fleet::model_state_name(static_cast<ModelState>(k)), counts[k]);
    }
  }
  struct Counter {
    const char* name;
    const char* type;
    const char* help;
    double (*get)(const Impl::ModelStats&);
  };
  const Counter counters[] = {
      {"tessera_cluster_requests_total", "counter", "Requests received per model",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.requests); }},
      {"tessera_cluster_answered_total", "counter", "Requests a replica answered",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.answered); }},
      {"tessera_cluster_failed_total", "counter", "Requests no replica answered (deadline, failures)",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.failed); }},
      {"tessera_cluster_refused_total", "counter", "Requests refused at once (limits, failed model)",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.refused); }},
      {"tessera_cluster_retries_total", "counter", "Requests re-routed after a replica could not take them",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.retries); }},
      {"tessera_cluster_slo_met_total", "counter", "Answered requests whose first byte came within the TTFT SLO",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.slo_met); }},
      {"tessera_cluster_scale_ups_total", "counter", "Replicas started (scale up)",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.scale_ups); }},
      {"tessera_cluster_scale_downs_total", "counter", "Replicas released (scale down)",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.scale_downs); }},
      {"tessera_cluster_replicas_lost_total", "counter", "Active replicas whose job went away",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.lost); }},
      {"tessera_cluster_affinity_routed_total", "counter", "Requests routed to a replica holding part of their prefix",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.affinity_routed); }},
      {"tessera_cluster_replica_seconds_total", "counter", "Seconds replicas held their job (starting, active, draining)",
       [](const Impl::ModelStats& s) { return s.replica_s; }},
      {"tessera_cluster_idle_replica_seconds_total", "counter", "Seconds active replicas had no request",
       [](const Impl::ModelStats& s) { return s.idle_replica_s; }},
      {"tessera_cluster_kept_replica_seconds_total", "counter",
       "Seconds replica jobs were kept with their model suspended in place",
       [](const Impl::ModelStats& s) { return s.kept_s; }},
      {"tessera_cluster_slo_scaled_routes_total", "counter",
       "Requests routed with the replica cap halved because the model missed its TTFT SLO",
       [](const Impl::ModelStats& s) { return static_cast<double>(s.slo_scaled_routes); }},
  };
  for (const Counter& c : counters) {
    family(c.name, c.type, c.help);
    for (size_t mi = 0; mi < d.o.models.size(); ++mi) {
      out += fmt::format("{}{{model=\"{}\"}} {}\n", c.name, d.o.models[mi].name, c.get(d.stats[mi]));
    }
  }
  // What each slot's moves measured: the inputs of the keep-or-release choice.
  std::vector<ReplicaMeasures> measures;
  for (size_t i = 0; i < d.slots.size(); ++i) measures.push_back(d.host->measured(static_cast<ModelIndex>(i)));
  const struct {
    const char* name;
    const char* help;
    double (*get)(const ReplicaMeasures&);
  } per_slot[] = {
      {"tessera_cluster_replica_job_kept", "1 while the slot's job is kept with its model suspended in place",
       [](const ReplicaMeasures& r) { return r.kept ? 1.0 : 0.0; }},
      {"tessera_cluster_replica_cold_start_seconds", "The slot's mean measured cold start (sbatch to ready)",
       [](const ReplicaMeasures& r) { return r.cold_start_s; }},
      {"tessera_cluster_replica_resume_in_place_seconds", "The slot's mean measured in-place resume",
       [](const ReplicaMeasures& r) { return r.resume_s; }},
  };
  family("tessera_cluster_kept_released_total", "counter",
         "Kept jobs released (after release_kept_after_s, or past the kept-memory budget)");
  for (size_t mi = 0; mi < d.o.models.size(); ++mi) {
    int64_t n = 0;
    for (ModelIndex s : d.model_slots[mi]) n += measures[static_cast<size_t>(s)].kept_released;
    out += fmt::format("tessera_cluster_kept_released_total{{model=\"{}\"}} {}\n", d.o.models[mi].name, n);
  }
  for (const auto& g : per_slot) {
    family(g.name, "gauge", g.help);
    for (size_t i = 0; i < d.slots.size(); ++i) {
      out += fmt::format("{}{{model=\"{}\",replica=\"{}\"}} {}\n", g.name, d.slots[i].model,
                         d.slots[i].replica, g.get(measures[i]));
    }
  }
  return out;
}

}  // namespace tessera::cluster
