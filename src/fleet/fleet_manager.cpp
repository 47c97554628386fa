#include "tessera/fleet/fleet_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "tessera/base/check.h"
#include "tessera/base/log.h"
#include "tessera/fleet/live_model_host.h"

namespace tessera::fleet {

using engine::RequestId;

// The controller's Timer: a wake-up due now wakes the control thread (later ones are met by
// its periodic tick).
class FleetManager::LiveTimer final : public Timer {
 public:
  explicit LiveTimer(FleetManager* f) : f_(f) {}
  void wake_at(int64_t at_ns) override {
    if (at_ns > f_->clock_->now_ns()) return;
    {
      std::lock_guard<std::mutex> lock(f_->wake_mu_);
      f_->wake_ = true;
    }
    f_->wake_cv_.notify_one();
  }

 private:
  FleetManager* f_;
};

FleetManager::FleetManager(FleetOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : real_clock()),
      timer_(std::make_unique<LiveTimer>(this)) {}

FleetManager::~FleetManager() { stop(); }

Result<std::unique_ptr<FleetManager>> FleetManager::create(std::vector<FleetModelSpec> models,
                                                           FleetOptions options) {
  if (models.empty()) return invalid_argument("the fleet has no models");
  if (options.active_budget_bytes < 0) return invalid_argument("the memory budget must be >= 0");
  if (options.io_threads < 1) options.io_threads = 1;
  std::set<std::string> seen;
  for (const auto& spec : models) {
    if (spec.name.empty()) return invalid_argument("a fleet model has an empty name: " + spec.path);
    if (!seen.insert(spec.name).second) {
      return invalid_argument(fmt::format(
          "two fleet models are named '{}': names come from file stems and must be unique",
          spec.name));
    }
  }
  for (const auto& spec : models) {
    if (spec.parent.empty()) continue;
    const auto base = std::find_if(models.begin(), models.end(), [&](const FleetModelSpec& x) {
      return x.name == spec.parent;
    });
    if (base == models.end() || !base->parent.empty()) {
      return invalid_argument(fmt::format("adapter {}: the fleet has no base model named '{}'",
                                          spec.name, spec.parent));
    }
  }
  // Bases first: the host opens an adapter against its base's file.
  std::stable_partition(models.begin(), models.end(),
                        [](const FleetModelSpec& x) { return x.parent.empty(); });
  std::unique_ptr<FleetManager> m(new FleetManager(std::move(options)));
  const FleetOptions& o = m->options_;
  LiveHostOptions ho;
  ho.io_threads = o.io_threads;
  ho.keep_prefix_bytes = o.keep_prefix_bytes;
  ho.drain_timeout_ns = o.request_deadline_ns;
  ho.images_on_disk = o.host_budget_bytes > 0;
  ho.device = o.device;
  ho.clock = m->clock_;
  ho.on_finished = [f = m.get()] {
    {
      std::lock_guard<std::mutex> lock(f->wake_mu_);
      f->replan_ = true;
    }
    f->wake_cv_.notify_one();
  };
  m->host_ = std::make_unique<LiveModelHost>(ho);
  for (const auto& spec : models) m->host_->add(spec);
  m->host_->size_kv_pools(o.active_budget_bytes);

  std::vector<ControlledModel> controlled;
  for (size_t i = 0; i < models.size(); ++i) {
    const LiveModelHost::Model& h = m->host_->model(static_cast<ModelIndex>(i));
    ControlledModel c;
    c.name = models[i].name;
    c.active_bytes = h.active_bytes();
    c.weight_bytes = h.weight_bytes;
    c.pinned = models[i].pinned;
    c.idle_policy = models[i].idle_policy;
    c.ttft_slo_ns = models[i].engine.ttft_slo_ns;
    c.failed = h.open_error;
    c.parent = models[i].parent;
    c.device = models[i].parent.empty() ? models[i].device : -1;  // an adapter's bytes: host
    controlled.push_back(std::move(c));
    m->names_.push_back(models[i].name);
  }
  ControllerOptions co;
  co.active_budget_bytes = o.active_budget_bytes;
  co.host_budget_bytes = o.host_budget_bytes;
  co.device_budget_bytes = o.device_budget_bytes;
  co.idle_policy = o.idle_policy;
  co.eviction = o.eviction;
  co.histogram = o.histogram;
  co.request_deadline_ns = o.request_deadline_ns;
  TS_ASSIGN_OR_RETURN(m->controller_,
                      FleetController::create(std::move(controlled), co, m->host_.get(),
                                              m->clock_, m->timer_.get()));
  m->host_->set_controller(m->controller_.get());
  return m;
}

int32_t FleetManager::runs_on(int32_t m) const {
  const ModelIndex p = host_->model(m).parent;  // fixed at create()
  return p >= 0 ? p : m;
}

int32_t FleetManager::index(const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<int32_t>(i);
  }
  return -1;
}

template <typename F>
auto FleetManager::locked(F&& f) {
  std::vector<std::function<void()>> deferred;
  auto run = [&] {
    std::lock_guard<std::mutex> lock(ctl_mu_);
    host_->drain_finished();
    struct Take {
      LiveModelHost* h;
      std::vector<std::function<void()>>* out;
      ~Take() { *out = h->take_deferred(); }
    } take{host_.get(), &deferred};
    return f();
  };
  if constexpr (std::is_void_v<decltype(f())>) {
    run();
    for (auto& d : deferred) d();
  } else {
    auto r = run();
    for (auto& d : deferred) d();
    return r;
  }
}

void FleetManager::run_moves(bool settle) {
  for (int round = 0; round < 64; ++round) {
    for (;;) {
      auto mv = locked([&] { return host_->take_move(); });
      if (!mv) break;
      Status st = host_->carry_out(mv->first, mv->second);
      locked([&] { host_->complete_move(mv->first, mv->second, std::move(st)); });
    }
    if (!settle) return;
    // A bring-up that waited for room (or requests that arrived during a suspension) asks for an
    // immediate tick.
    bool again = false;
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      again = wake_;
      wake_ = false;
    }
    if (!again) return;
    locked([&] { controller_->tick(); });
  }
}

Status FleetManager::start() {
  if (started_.exchange(true)) return Status();
  Status first;
  if (options_.load_on_start) {
    std::lock_guard<std::mutex> moves(move_mu_);
    for (size_t i = 0; i < names_.size(); ++i) {
      const auto m = static_cast<ModelIndex>(i);
      Status st = locked([&]() -> Status {
        const ControlledModel& c = controller_->model(m);
        if (controller_->state(m) == ModelState::kFailed) return controller_->status(m).last_error.empty()
            ? Status() : Status(ErrorCode::kUnavailable, controller_->status(m).last_error);
        if (controller_->budget_for(m).available() < c.active_bytes) {
          log_info("fleet: {} stays unloaded until requested ({} bytes do not fit the budget)",
                   c.name, c.active_bytes);
          return Status();
        }
        return controller_->load(m, "start");
      });
      run_moves(false);
      if (st.is_ok()) {
        st = locked([&]() -> Status {
          return controller_->state(m) == ModelState::kFailed
                     ? Status(ErrorCode::kUnavailable, controller_->status(m).last_error)
                     : Status();
        });
      }
      if (!st.is_ok() && first.is_ok()) first = st;
    }
  }
  control_ = std::thread([this] { control_loop(); });
  return first;
}

void FleetManager::stop() {
  if (stopped_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stopping_ = true;
  }
  wake_cv_.notify_all();
  if (control_.joinable()) control_.join();
  std::lock_guard<std::mutex> moves(move_mu_);
  std::vector<std::shared_ptr<engine::Engine>> engines = locked([&] {
    controller_->refuse_all_queued(Status(ErrorCode::kUnavailable, "the server is stopping"));
    return host_->take_engines();
  });
  for (auto& e : engines) e->stop();
  locked([] {});  // the finishes of the stopped engines' requests
}

void FleetManager::control_loop() {
  using Steady = std::chrono::steady_clock;
  const auto period = std::chrono::nanoseconds(std::max<int64_t>(options_.tick_ns, 1'000'000));
  auto last_tick = Steady::now();
  for (;;) {
    // Tick every period (real time) at the latest, and at the policies' next decision (a
    // keep-alive expiring, a pre-warm due) when that comes sooner, so decisions land when they
    // are due rather than up to a period late (the simulator ticks exactly then); never sooner
    // than 1 ms from now. A finish re-plans (a model going idle starts its keep-alive) without
    // ticking; a request that needs a model (the Timer) ticks at once.
    auto until = last_tick + period;
    const int64_t next = locked([&] { return controller_->next_tick_ns(); });
    if (next >= 0 && next != IdlePolicy::kNever) {
      const int64_t in_ns = std::max<int64_t>(next - clock_->now_ns(), 1'000'000);
      until = std::min(until, Steady::now() + std::chrono::nanoseconds(in_ns));
    }
    {
      std::unique_lock<std::mutex> lock(wake_mu_);
      wake_cv_.wait_until(lock, until, [this] { return wake_ || replan_ || stopping_; });
      if (stopping_) return;
      const bool replan_only = !wake_ && replan_ && Steady::now() < until;
      replan_ = false;
      if (replan_only) continue;
      wake_ = false;
    }
    tick();
    last_tick = Steady::now();
  }
}

void FleetManager::tick() {
  std::lock_guard<std::mutex> moves(move_mu_);
  locked([&] { controller_->tick(); });
  run_moves(true);
}

void FleetManager::forget_activity() {
  locked([&] { controller_->forget_activity(); });
}

Status FleetManager::operator_move(const std::string& name,
                                   Status (FleetController::*move)(int32_t, std::string_view),
                                   std::string_view reason, bool bring_up) {
  const int32_t m = index(name);
  if (m < 0) return not_found("no fleet model named " + name);
  std::lock_guard<std::mutex> moves(move_mu_);
  Status r = locked([&] { return (controller_.get()->*move)(m, reason); });
  if (!r.is_ok()) return r;
  run_moves(true);
  if (!bring_up) return Status();
  return locked([&]() -> Status {
    const ControlledStatus st = controller_->status(m);
    if (st.state == ModelState::kActive) return Status();
    if (st.state == ModelState::kFailed) return Status(ErrorCode::kUnavailable, st.last_error);
    return Status(ErrorCode::kResourceExhausted,
                  fmt::format("model {} is {}: it did not come up", name, model_state_name(st.state)));
  });
}

Status FleetManager::load(const std::string& name, std::string_view reason) {
  return operator_move(name, &FleetController::load, reason, true);
}
Status FleetManager::suspend(const std::string& name, std::string_view reason) {
  return operator_move(name, &FleetController::suspend, reason, false);
}
Status FleetManager::resume(const std::string& name, std::string_view reason) {
  return operator_move(name, &FleetController::resume, reason, true);
}
Status FleetManager::evict(const std::string& name, std::string_view reason) {
  return operator_move(name, &FleetController::evict, reason, false);
}

Result<RequestId> FleetManager::submit(const std::string& name, engine::Request request,
                                       engine::EventSink sink) {
  const int32_t m = index(name);
  if (m < 0) return not_found("no fleet model named " + name);
  if (stopped_.load()) return Status(ErrorCode::kUnavailable, "the fleet is stopping");
  const RequestId id = next_id_.fetch_add(1);
  return locked([&]() -> Result<RequestId> {
    host_->stash(m, id, std::move(request), std::move(sink), clock_->now_ns());
    Status why;
    if (controller_->submit(m, id, &why) == Admission::kRefused) {
      host_->forget(id);
      return why;
    }
    return id;
  });
}

void FleetManager::embed(const std::string& name, std::vector<int32_t> tokens,
                         engine::Pooling pooling, engine::Engine::EmbedCallback done) {
  const int32_t m = index(name);
  if (m < 0) return done(not_found("no fleet model named " + name));
  if (runs_on(m) != m) {
    return done(Status(ErrorCode::kUnsupported,
                       name + " is an adapter: embeddings come from base models only"));
  }
  if (stopped_.load()) return done(Status(ErrorCode::kUnavailable, "the fleet is stopping"));
  if (Status st = opened(name); !st.is_ok()) return done(st);
  // What the engine would refuse, refused now (before a cold start is spent on it).
  const int64_t vocab = host_->model_ptr(m)->config().n_vocab;
  if (tokens.empty()) return done(invalid_argument("nothing to embed: the input has no tokens"));
  for (int32_t t : tokens) {
    if (t < 0 || t >= vocab) {
      return done(invalid_argument(
          fmt::format("token id {} is outside the vocabulary [0, {})", t, vocab)));
    }
  }
  if (static_cast<int64_t>(tokens.size()) > context_length(name)) {
    return done(invalid_argument(fmt::format("the input has {} tokens; at most {} (the context)",
                                             tokens.size(), context_length(name))));
  }
  const RequestId id = next_id_.fetch_add(1);
  engine::Engine::EmbedCallback refused_done = done;  // the host drops its copy on refusal
  Status why;
  const bool refused = locked([&] {
    host_->stash_embedding(m, id, std::move(tokens), pooling, std::move(done), clock_->now_ns());
    if (controller_->submit(m, id, &why) == Admission::kRefused) {
      host_->forget(id);
      return true;
    }
    return false;
  });
  if (refused) refused_done(why);
}

int64_t FleetManager::embedding_width(const std::string& name) const {
  const int32_t m = index(name);
  if (m < 0 || runs_on(m) != m) return 0;
  std::shared_ptr<model::Model> model = host_->model_ptr(m);
  return model ? model->config().dim : 0;
}

void FleetManager::cancel(const std::string& name, RequestId id) {
  const int32_t m = index(name);
  if (m < 0) return;
  if (locked([&] { return controller_->cancel(m, id); })) return;
  host_->cancel_running(m, id);
}

engine::EngineStats FleetManager::stats(const std::string& name) const {
  const int32_t m = index(name);
  if (m < 0 || runs_on(m) != m) return {};
  std::shared_ptr<engine::Engine> e = host_->engine(m);
  return e ? e->stats() : engine::EngineStats{};
}

std::vector<ModelStatus> FleetManager::status() const {
  std::vector<ModelStatus> out;
  for (const std::string& name : names_) out.push_back(*status(name));
  return out;
}

Result<ModelStatus> FleetManager::status(const std::string& name) const {
  const int32_t m = index(name);
  if (m < 0) return not_found("no fleet model named " + name);
  auto* self = const_cast<FleetManager*>(this);
  ControlledStatus c;
  ControlledModel spec;
  self->locked([&] {
    c = controller_->status(m);
    spec = controller_->model(m);
  });
  const LiveModelHost::Model& h = host_->model(m);
  ModelStatus s;
  s.name = name;
  s.path = h.path;
  s.parent = spec.parent;
  s.state = c.state;
  s.time_in_state_s = static_cast<double>(clock_->now_ns() - c.state_since_ns) * 1e-9;
  s.active_bytes = spec.active_bytes;
  s.weight_bytes = spec.weight_bytes;
  s.kept_prefix_blocks = h.kept.blocks();
  s.kept_prefix_bytes = h.kept.bytes();
  s.resumes = c.resumes;
  s.loads = c.loads;
  s.last_bring_up_s = c.last_bring_up_s;
  s.mean_resume_s = c.resumes_done > 0 ? c.resume_seconds / c.resumes_done : 0.0;
  s.mean_suspend_s = c.suspends_done > 0 ? c.suspend_seconds / c.suspends_done : 0.0;
  s.suspends = c.suspends_done;
  s.queued = c.queued;
  s.pinned = spec.pinned;
  const IdlePolicy* policy = controller_->idle_policy(m);  // immutable: no lock needed
  s.idle_policy = policy != nullptr ? std::string(policy->name()) : "none";
  s.last_error = c.last_error;
  s.memory_seconds = c.memory_seconds;
  s.idle_memory_seconds = c.idle_memory_seconds;
  s.cold_starts = c.cold_starts;
  s.in_flight = c.in_flight;
  s.finished = c.finished;
  s.slo_met = c.slo_met;
  s.ttft_slo_s = static_cast<double>(spec.ttft_slo_ns) * 1e-9;
  return s;
}

ModelState FleetManager::state(const std::string& name) const {
  const int32_t m = index(name);
  if (m < 0) return ModelState::kUnloaded;
  std::lock_guard<std::mutex> lock(ctl_mu_);
  return controller_->state(m);
}

std::vector<std::string> FleetManager::names() const { return names_; }

void FleetManager::add_listener(TransitionListener listener) {
  std::lock_guard<std::mutex> lock(ctl_mu_);
  controller_->add_listener(std::move(listener));
}

const model::Tokenizer& FleetManager::tokenizer(const std::string& name) const {
  auto t = shared_tokenizer(name);
  TS_CHECK_MSG(t != nullptr, "FleetManager::tokenizer: the model's file did not open");
  return *t;
}

std::shared_ptr<const model::Tokenizer> FleetManager::shared_tokenizer(const std::string& name) const {
  const int32_t m = index(name);
  TS_CHECK_MSG(m >= 0, "FleetManager::tokenizer: unknown model");
  return host_->tokenizer_ptr(runs_on(m));
}

const model::Metadata& FleetManager::metadata(const std::string& name) const {
  const int32_t m = index(name);
  TS_CHECK_MSG(m >= 0, "FleetManager::metadata: unknown model");
  auto model = host_->model_ptr(runs_on(m));
  TS_CHECK_MSG(model != nullptr, "FleetManager::metadata: the model's file did not open");
  return model->file().metadata;  // the model is never closed once open
}

Status FleetManager::opened(const std::string& name) const {
  const int32_t named = index(name);
  if (named < 0) return not_found("no fleet model named " + name);
  const int32_t m = runs_on(named);
  if (host_->model_ptr(m) != nullptr) return Status();
  const ControlledStatus c = const_cast<FleetManager*>(this)->locked([&] { return controller_->status(m); });
  return Status(ErrorCode::kUnavailable,
                fmt::format("model {} is unavailable: it failed to load ({}); retried on a request "
                            "after {:.0f} s",
                            names_[static_cast<size_t>(m)], host_->open_error(m),
                            std::max(0.0, (c.retry_at_ns - clock_->now_ns()) * 1e-9)));
}

int64_t FleetManager::context_length(const std::string& name) const {
  const int32_t m = index(name);
  TS_CHECK_MSG(m >= 0, "FleetManager::context_length: unknown model");
  auto model = host_->model_ptr(runs_on(m));
  if (model == nullptr) return 0;
  const int64_t model_ctx = model->config().context_length;
  const int64_t ctx = host_->model(runs_on(m)).engine_options.ctx_size;
  return ctx > 0 ? std::min(ctx, model_ctx) : model_ctx;
}

}  // namespace tessera::fleet
