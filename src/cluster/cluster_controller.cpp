#include "tessera/cluster/cluster_controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "tessera/base/log.h"
#include "tessera/cluster/cluster_metrics.h"
#include "tessera/cluster/dashboard_page.h"
#include "tessera/cluster/request_prefix.h"
#include "tessera/cluster/upstream_call.h"
#include "tessera/fleet/fleet_controller.h"
#include "tessera/fleet/idle_policy.h"
#include "tessera/fleet/keep_alive_policy.h"
#include "tessera/serve/api_error.h"
#include "tessera/serve/json_util.h"

namespace tessera::cluster {
namespace {

using fleet::ModelIndex;
using fleet::ModelState;
using json = nlohmann::json;

constexpr int kMaxTries = 3;

int64_t seconds_to_ns(double seconds) { return static_cast<int64_t>(seconds * 1e9); }
double ns_to_seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

bool holds_replica(ModelState s) {
  return s == ModelState::kLoading || s == ModelState::kActive || s == ModelState::kSuspending ||
         s == ModelState::kResuming;
}

void respond_error(const std::shared_ptr<serve::ResponseWriter>& w, const Status& st,
                   std::string param = {}) {
  auto e = serve::api_error_from_status(st, std::move(param));
  w->respond(serve::api_error_response(e));
}

Result<std::shared_ptr<const fleet::IdlePolicy>> idle_policy_of(const ClusterOptions& o) {
  if (o.keep_alive_s < 0 || o.idle_policy == "always-on") {
    return std::shared_ptr<const fleet::IdlePolicy>(
        std::make_shared<fleet::FixedKeepAlivePolicy>(fleet::FixedKeepAlivePolicy::always_on()));
  }
  auto made = fleet::make_idle_policy({o.idle_policy, o.keep_alive_s});
  if (!made.is_ok()) return made.status().with_context("idle policy");
  return std::shared_ptr<const fleet::IdlePolicy>(std::move(made).value());
}

}  // namespace

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
  using ModelStats = ClusterModelStats;

  Impl(ClusterOptions options, const Clock* c)
      : o(std::move(options)),
        clock(c),
        ttft_slo_ns(seconds_to_ns(o.ttft_slo_s)),
        release_kept_after_ns(seconds_to_ns(o.release_kept_after_s)),
        slurm_poll_ns(seconds_to_ns(o.slurm_poll_s)),
        router({o.routing, o.replica_cap, o.slo_window, o.prefix_block_chars},
               static_cast<int32_t>(o.models.size())) {}

  const ClusterOptions o;
  const Clock* const clock;
  const int64_t ttft_slo_ns, release_kept_after_ns, slurm_poll_ns;
  std::unique_ptr<SlurmClient> slurm;
  JobPlan plan;                                    // slots, slot -> model, model -> slots
  std::vector<int32_t> in_flight;                  // per slot: routed, not finished
  std::vector<int32_t> forwarding;                 // per slot: proxy threads running
  ReplicaRouter router;
  std::vector<ModelStats> stats;                   // per model
  std::unique_ptr<SlurmReplicaHost> host;
  std::unique_ptr<fleet::FleetController> ctl;
  mutable serve::MetricsRegistry metrics;          // filled from the stats at each scrape

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

  const std::vector<ReplicaSlot>& slots() const { return plan.slots; }

  // fleet::Timer; called under mu (from inside controller calls).
  void wake_at(int64_t at_ns) override {
    if (at_ns < wake_ns) {
      wake_ns = at_ns;
      cv.notify_all();
    }
  }

  // create()'s parts: the host with its callbacks into this, then the controller over it.
  void make_host();
  Status make_controller(std::shared_ptr<const fleet::IdlePolicy> policy, const std::vector<int64_t>& file_bytes);

  void route_locked(engine::RequestId old_id, Pending p);
  void forward_locked(ModelIndex slot, engine::RequestId id, const std::string& host, int port);
  void run_forward(ModelIndex slot, engine::RequestId id, std::string host, int port);
  // After a forward: the request answered, re-routed or failed.
  void finish_forward_locked(ModelIndex slot, engine::RequestId id, const Status& st, bool answered,
                             bool busy, bool slo);
  void sample_locked(int64_t now);
  // Kept jobs suspended longer than release_kept_after_s are released.
  void release_kept_locked(int64_t now);
  void control_loop();
  // Reads Slurm's job list (unlocks `lock` meanwhile): lost replicas suspended, pinned ones back.
  void poll_slurm(std::unique_lock<std::mutex>& lock);
  void mark_lost_locked(ModelIndex slot, const std::string& why);
  // GET routes that answer from the controller's own state; false when `request` is not one.
  bool serve_own_route(const serve::HttpRequest& request, serve::ResponseWriter& writer,
                       const ClusterController& self) const;
  int32_t model_index(const std::string& model) const;  // -1: not served here ("": the only one)
  void collect_metrics_locked() const;
};

ClusterController::ClusterController(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClusterController::~ClusterController() { stop(false); }

Result<std::unique_ptr<ClusterController>> ClusterController::create(ClusterOptions options,
                                                                     std::unique_ptr<SlurmClient> slurm,
                                                                     const Clock* clock) {
  const std::vector<int64_t> file_bytes = model_file_bytes(options.models);
  auto plan = plan_jobs({options.name, options.models, options.colocate, options.replica_port_base, file_bytes});
  if (!plan.is_ok()) return plan.status();
  if (slurm == nullptr) return invalid_argument("no Slurm client");
  if (clock == nullptr) return invalid_argument("no clock");
  auto policy = idle_policy_of(options);
  if (!policy.is_ok()) return policy.status();
  if (options.slo_window < 0 || options.slo_window > 1024) {
    return invalid_argument(fmt::format("SLO window {} outside 0..1024", options.slo_window));
  }
  auto impl = std::make_unique<Impl>(std::move(options), clock);
  impl->plan = std::move(plan).value();
  const size_t n = impl->slots().size();
  impl->in_flight.assign(n, 0);
  impl->forwarding.assign(n, 0);
  impl->stats.assign(impl->o.models.size(), {});
  impl->slurm = std::move(slurm);
  impl->make_host();
  if (Status st = impl->make_controller(*policy, file_bytes); !st.is_ok()) return st;
  return std::unique_ptr<ClusterController>(new ClusterController(std::move(impl)));
}

void ClusterController::Impl::make_host() {
  SlurmReplicaHost::Callbacks cb;
  cb.move_done = [this](ModelIndex m, const Status& st) {
    std::lock_guard<std::mutex> lock(mu);
    ctl->move_done(m, st);
  };
  cb.forward = [this](ModelIndex m, engine::RequestId id, const std::string& h, int p) {
    forward_locked(m, id, h, p);
  };
  cb.reject = [this](ModelIndex m, engine::RequestId id, const Status& why) {
    auto it = pending.find(id);
    if (it == pending.end()) return;
    --in_flight[static_cast<size_t>(m)];
    ++stats[static_cast<size_t>(it->second.model)].failed;
    respond_error(it->second.writer, why);
    pending.erase(it);
  };
  cb.in_flight = [this](ModelIndex m) {
    std::lock_guard<std::mutex> lock(mu);
    return forwarding[static_cast<size_t>(m)];
  };
  ReplicaHostOptions host_options = o.host;
  host_options.ttft_slo_s = o.ttft_slo_s;
  host = std::make_unique<SlurmReplicaHost>(slots(), host_options, slurm.get(), clock, std::move(cb));
}

Status ClusterController::Impl::make_controller(std::shared_ptr<const fleet::IdlePolicy> policy,
                                                const std::vector<int64_t>& file_bytes) {
  std::vector<fleet::ControlledModel> entries;
  for (size_t i = 0; i < slots().size(); ++i) {
    const ReplicaSlot& s = slots()[i];
    fleet::ControlledModel cm;
    cm.name = fmt::format("{}#{}", s.model, s.replica);
    cm.active_bytes = s.memory_mb << 20;
    cm.weight_bytes = file_bytes[static_cast<size_t>(plan.slot_model[i])];
    cm.idle_policy = policy;
    cm.pinned = plan.pinned[i];
    cm.ttft_slo_ns = ttft_slo_ns;
    entries.push_back(std::move(cm));
  }
  fleet::ControllerOptions co;
  co.idle_policy = std::move(policy);
  co.host_budget_bytes = o.kept_memory_mb > 0 ? o.kept_memory_mb << 20 : 0;
  co.request_deadline_ns = seconds_to_ns(o.request_deadline_s);
  co.retry_backoff_ns = 2'000'000'000;
  co.max_retry_backoff_ns = 60'000'000'000;
  auto made = fleet::FleetController::create(std::move(entries), co, host.get(), clock, this);
  if (!made.is_ok()) return made.status();
  ctl = std::move(*made);
  ctl->add_listener([this](const fleet::TransitionEvent& e) {
    // "<model>#k": count scale events per model.
    const std::string model = e.model.substr(0, e.model.rfind('#'));
    for (size_t mi = 0; mi < o.models.size(); ++mi) {
      if (o.models[mi].name != model) continue;
      if (e.to == ModelState::kLoading || e.to == ModelState::kResuming) ++stats[mi].scale_ups;
      if (e.to == ModelState::kSuspending) ++stats[mi].scale_downs;
      log_info("cluster: {} {} -> {} ({})", e.model, fleet::model_state_name(e.from),
               fleet::model_state_name(e.to), e.reason);
    }
  });
  return Status::ok();
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
  for (size_t i = 0; i < d.slots().size(); ++i) {
    bool adopt = false;
    for (const SlurmJob& j : *jobs) {
      adopt |= j.name == d.slots()[i].job_name &&
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
  const int64_t dt = now - last_sample_ns;
  last_sample_ns = now;
  if (dt <= 0) return;
  for (size_t i = 0; i < slots().size(); ++i) {
    const ModelState s = ctl->state(static_cast<ModelIndex>(i));
    ModelStats& ms = stats[static_cast<size_t>(plan.slot_model[i])];
    if (s == ModelState::kSuspended && host->kept(static_cast<ModelIndex>(i))) ms.kept_ns += dt;
    if (!holds_replica(s)) continue;
    ms.replica_ns += dt;
    if (s == ModelState::kActive && in_flight[i] == 0) ms.idle_replica_ns += dt;
  }
}

void ClusterController::Impl::release_kept_locked(int64_t now) {
  if (release_kept_after_ns < 0) return;
  for (size_t i = 0; i < slots().size(); ++i) {
    const auto m = static_cast<ModelIndex>(i);
    if (ctl->state(m) != ModelState::kSuspended || ctl->status(m).moving) continue;
    if (now - ctl->status(m).state_since_ns < release_kept_after_ns || !host->kept(m)) continue;
    (void)ctl->evict(m, fmt::format("kept {:.0f} s suspended", o.release_kept_after_s));
  }
}

void ClusterController::Impl::mark_lost_locked(ModelIndex slot, const std::string& why) {
  const int32_t mi = plan.slot_model[static_cast<size_t>(slot)];
  router.forget(mi, slots()[static_cast<size_t>(slot)].replica);
  if (ctl->state(slot) == ModelState::kActive) {
    ++stats[static_cast<size_t>(mi)].lost;
    log_warn("cluster: {} lost: {}", slots()[static_cast<size_t>(slot)].job_name, why);
    (void)ctl->suspend(slot, "replica lost: " + why);
  }
}

void ClusterController::Impl::control_loop() {
  constexpr int64_t kBeatNs = 200'000'000;  // usage is sampled at least this often
  int64_t next_poll = clock->now_ns() + slurm_poll_ns;
  std::unique_lock<std::mutex> lock(mu);
  while (!stopping) {
    const int64_t now = clock->now_ns();
    const int64_t until = std::min({wake_ns, next_poll, now + kBeatNs});
    cv.wait_for(lock, std::chrono::nanoseconds(std::max<int64_t>(until - now, 0)));
    if (stopping) break;
    const int64_t t = clock->now_ns();
    sample_locked(t);
    // Tick on every wake-up (the controller's own wish, a queued request, or the beat that
    // samples usage): ticking early is always allowed and costs microseconds.
    wake_ns = std::numeric_limits<int64_t>::max();
    ctl->tick();
    release_kept_locked(t);
    wake_at(ctl->next_tick_ns());
    if (t >= next_poll) {
      next_poll = t + slurm_poll_ns;
      poll_slurm(lock);
    }
  }
}

void ClusterController::Impl::poll_slurm(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  auto jobs = slurm->jobs(o.name + "-");
  std::vector<ModelIndex> lost;
  if (jobs.is_ok()) lost = host->reconcile(*jobs);
  lock.lock();
  for (ModelIndex m : lost) mark_lost_locked(m, "its Slurm job is no longer running");
  // The minimum replicas come back when lost.
  for (size_t i = 0; i < slots().size(); ++i) {
    const auto m = static_cast<ModelIndex>(i);
    if (!ctl->model(m).pinned || ctl->status(m).moving) continue;
    const ModelState st = ctl->state(m);
    if (st == ModelState::kSuspended) (void)ctl->resume(m, "min replicas");
    if (st == ModelState::kUnloaded || st == ModelState::kEvicted) (void)ctl->load(m, "min replicas");
  }
}

void ClusterController::Impl::route_locked(engine::RequestId old_id, Pending p) {
  if (old_id != 0) pending.erase(old_id);
  const auto& ss = plan.model_slots[static_cast<size_t>(p.model)];
  ModelStats& ms = stats[static_cast<size_t>(p.model)];
  std::vector<fleet::ReplicaSlotView> views(ss.size());
  for (size_t k = 0; k < ss.size(); ++k) views[k] = {ctl->state(ss[k]), in_flight[static_cast<size_t>(ss[k])], 0};
  const RouteChoice choice = router.choose(p.model, p.text, views, clock->now_ns());
  if (choice.slo_capped) ++ms.slo_scaled_routes;
  if (choice.affinity) ++ms.affinity_routed;
  const ModelIndex slot = ss[static_cast<size_t>(choice.replica)];
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
  const bool slo = answered && first_byte_ns >= 0 && first_byte_ns - arrived <= ttft_slo_ns;
  std::lock_guard<std::mutex> lock(mu);
  finish_forward_locked(slot, id, st, answered, busy, slo);
}

void ClusterController::Impl::finish_forward_locked(ModelIndex slot, engine::RequestId id, const Status& st,
                                                    bool answered, bool busy, bool slo) {
  --forwarding[static_cast<size_t>(slot)];
  --forwarding_total;
  auto it = pending.find(id);
  if (it != pending.end()) {
    Pending& p = it->second;
    ModelStats& ms = stats[static_cast<size_t>(p.model)];
    ctl->finished(slot, id, slo);
    --in_flight[static_cast<size_t>(slot)];
    if (answered) {
      ++ms.answered;
      if (slo) ++ms.slo_met;
      // A late answer that waited for a cold start says nothing about the replicas' load.
      if (!p.waited_for_replica) router.answered(p.model, clock->now_ns(), slo);
      pending.erase(it);
    } else if (p.tries < kMaxTries && !stopping && !p.writer->disconnected()) {
      // Not taken (unreachable, or busy): another replica gets it; the client sees one answer.
      ++ms.retries;
      if (!busy) mark_lost_locked(slot, st.message());
      route_locked(id, std::move(p));
    } else {
      ++ms.failed;
      respond_error(p.writer, busy ? Status(ErrorCode::kUnavailable, "every replica tried is busy")
                                   : st.with_context("no replica could take the request"));
      pending.erase(it);
    }
  }
  if (forwarding_total == 0) idle_cv.notify_all();
}

bool ClusterController::Impl::serve_own_route(const serve::HttpRequest& request, serve::ResponseWriter& writer,
                                              const ClusterController& self) const {
  if (request.method != "GET") return false;
  const std::string& path = request.path;
  if (path == "/health") {
    writer.respond({200, "application/json", {}, R"({"status":"ok"})"});
  } else if (path == "/metrics") {
    writer.respond({200, "text/plain; version=0.0.4", {}, self.metrics_text()});
  } else if (path == "/cluster/status") {
    writer.respond({200, "application/json", {}, serve::dump_json(self.status_json())});
  } else if (path == "/dashboard") {
    writer.respond({200, "text/html; charset=utf-8", {}, dashboard_html(o.chart_js)});
  } else if (path == "/cluster/targets") {
    writer.respond({200, "application/json", {}, serve::dump_json(self.prometheus_targets())});
  } else if (path == "/v1/models") {
    json data = json::array();
    for (const auto& m : o.models) {
      data.push_back({{"id", m.name}, {"object", "model"}, {"owned_by", "tessera"}, {"created", 0}});
    }
    writer.respond({200, "application/json", {}, serve::dump_json({{"object", "list"}, {"data", data}})});
  } else {
    return false;
  }
  return true;
}

int32_t ClusterController::Impl::model_index(const std::string& model) const {
  int32_t mi = -1;
  for (size_t i = 0; i < o.models.size(); ++i) {
    if (o.models[i].name == model) mi = static_cast<int32_t>(i);
  }
  if (mi < 0 && model.empty() && o.models.size() == 1) mi = 0;
  return mi;
}

void ClusterController::handle(serve::HttpRequest&& request,
                               std::shared_ptr<serve::ResponseWriter> writer) {
  Impl& d = *impl_;
  if (d.serve_own_route(request, *writer, *this)) return;
  const std::string& path = request.path;
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
  const int32_t mi = d.model_index(model);
  if (mi < 0) {
    respond_error(writer,
                  not_found(fmt::format("model '{}' is not served here; GET /v1/models lists them", model)),
                  "model");
    return;
  }
  Impl::Pending p;
  p.model = mi;
  p.text = request_prefix_text(body);
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
    for (ModelIndex s : d.plan.model_slots[mi]) {
      const ModelState state = d.ctl->state(s);
      up += holds_replica(state) ? 1 : 0;
      const auto cs = d.ctl->status(s);
      const ReplicaMeasures r = d.host->measured(s);
      kept_released += r.kept_released;
      replicas.push_back({{"slot", d.slots()[static_cast<size_t>(s)].replica},
                          {"state", fleet::model_state_name(state)},
                          {"job", d.host->job_of(s)},
                          {"job_kept", r.kept},
                          {"port", d.slots()[static_cast<size_t>(s)].port},
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
                      {"replica_seconds", ns_to_seconds(st.replica_ns)},
                      {"idle_replica_seconds", ns_to_seconds(st.idle_replica_ns)},
                      {"kept_replica_seconds", ns_to_seconds(st.kept_ns)},
                      {"kept_released", kept_released},
                      {"slo_scaled_routes", st.slo_scaled_routes},
                      {"slo_pressure", d.router.slo_pressure(static_cast<int32_t>(mi), d.clock->now_ns())},
                      {"replicas", replicas}});
  }
  return {{"cluster", d.o.name},
          {"routing", routing_policy_name(d.o.routing)},
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
  for (size_t i = 0; i < d.slots().size(); ++i) {
    if (d.ctl->state(static_cast<ModelIndex>(i)) != ModelState::kActive) continue;
    const ReplicaSlot& s = d.slots()[i];
    if (std::find(ports.begin(), ports.end(), s.port) != ports.end()) continue;
    ports.push_back(s.port);
    out.push_back({{"targets", {fmt::format("127.0.0.1:{}", s.port)}},
                   {"labels", {{"model", s.model}, {"replica", std::to_string(s.replica)},
                               {"slurm_job", std::to_string(d.host->job_of(static_cast<ModelIndex>(i)))}}}});
  }
  return out;
}

void ClusterController::Impl::collect_metrics_locked() const {
  std::vector<ModelState> states;
  std::vector<ReplicaMeasures> measures;
  for (size_t i = 0; i < slots().size(); ++i) {
    states.push_back(ctl->state(static_cast<ModelIndex>(i)));
    measures.push_back(host->measured(static_cast<ModelIndex>(i)));
  }
  export_cluster_metrics({o.models, stats, slots(), plan.slot_model, states, measures}, metrics);
}

std::string ClusterController::metrics_text() const {
  const Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  d.collect_metrics_locked();
  return d.metrics.render();
}

}  // namespace tessera::cluster
