#include "tessera/fleet/fleet_manager.h"

#include "tessera/engine/kv_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "tessera/base/check.h"
#include "tessera/base/log.h"
#include "tessera/fleet/anonymous_region.h"
#include "tessera/fleet/image_file_region.h"
#include "tessera/fleet/file_backed_region.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/architecture.h"

namespace tessera::fleet {

using engine::Event;
using engine::EventSink;
using engine::FinishEvent;
using engine::FinishReason;
using engine::RequestId;

struct FleetManager::Pending {
  RequestId id = 0;
  engine::Request request;
  EventSink sink;
  int64_t submit_ns = 0;
  int64_t deadline_ns = 0;
};

struct FleetManager::Slot {
  FleetModelSpec spec;
  std::shared_ptr<model::Model> model;
  std::shared_ptr<const model::Tokenizer> tokenizer;
  std::unique_ptr<TieredRegion> region;  // null when the weights are not one file mapping
  int64_t weight_bytes = 0;
  // Prefix-cache blocks kept across a suspension (engine/prefix_blocks.h): their bytes in a
  // region that follows the weights' tier; null when none are kept. Moved under control_mu_;
  // the counts are read by status() on any thread.
  std::unique_ptr<AnonymousRegion> kept_kv;
  engine::PrefixBlockSet kept_prefix;
  std::atomic<int64_t> kept_blocks{0};
  std::atomic<int64_t> kept_bytes{0};
  int64_t kv_bytes = 0;
  std::unique_ptr<ModelLifecycle> lifecycle;

  // Guards the fields below. Order: control_mu_ -> mu -> ids_mu / activity_mu_.
  mutable std::mutex mu;
  std::shared_ptr<engine::Engine> engine;  // set while Active
  bool accepting = false;                  // submit() goes straight to the engine
  std::deque<Pending> pending;             // waiting for the model to come up
  bool bring_up_requested = false;
  std::string last_error;
  double last_bring_up_s = 0.0;

  // Fleet id -> engine id (0 until the engine accepted it) of dispatched requests. Leaf lock,
  // taken by sinks on the engine thread, never held while calling into an engine.
  std::mutex ids_mu;
  std::map<RequestId, RequestId> running;

  int64_t active_bytes() const { return weight_bytes + kv_bytes; }

  // Usage accounting (leaf lock). Memory-seconds integrate active_bytes() over the time the model
  // holds its active memory (Loading, Active, Resuming, Suspending); idle memory-seconds only over
  // the part of it with no request in flight.
  mutable std::mutex acct_mu;
  int64_t acct_ns = -1;
  bool holding = false;
  int32_t in_flight = 0;
  double memory_s = 0.0;
  double idle_memory_s = 0.0;
  int64_t cold_starts = 0;
  int64_t finished = 0;
  int64_t slo_met = 0;

  // Integrates up to `now_ns`; caller holds acct_mu.
  void integrate(int64_t now_ns) {
    if (acct_ns >= 0 && now_ns > acct_ns && holding) {
      const double held = static_cast<double>(active_bytes()) * static_cast<double>(now_ns - acct_ns) * 1e-9;
      memory_s += held;
      if (in_flight == 0) idle_memory_s += held;
    }
    acct_ns = std::max(acct_ns, now_ns);
  }
};

namespace {

// The KV pool the engine will allocate for `o`: the engine's own sizing rule (0 when the
// options are invalid; Engine::create then refuses them with the reason).
int64_t kv_pool_bytes(const model::ModelConfig& c, const engine::EngineOptions& o) {
  const Result<engine::KvPoolSize> size = engine::size_kv_pool(c, o);
  return size.is_ok() ? size.value().bytes() : 0;
}

FinishEvent error_finish(const Status& why) {
  FinishEvent f;
  f.reason = FinishReason::kError;
  f.error = why;
  return f;
}

}  // namespace

FleetManager::FleetManager(FleetOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : real_clock()),
      budget_(options_.active_budget_bytes),
      eviction_(options_.eviction),
      activity_(options_.histogram) {}

Result<std::unique_ptr<FleetManager>> FleetManager::create(std::vector<FleetModelSpec> models,
                                                           FleetOptions options) {
  if (models.empty()) return invalid_argument("the fleet has no models");
  if (options.active_budget_bytes < 0) return invalid_argument("the memory budget must be >= 0");
  if (options.io_threads < 1) options.io_threads = 1;
  std::unique_ptr<FleetManager> m(new FleetManager(std::move(options)));
  std::set<std::string> seen;
  for (auto& spec : models) {
    if (spec.name.empty()) return invalid_argument("a fleet model has an empty name: " + spec.path);
    if (!seen.insert(spec.name).second) {
      return invalid_argument(fmt::format(
          "two fleet models are named '{}': names come from file stems and must be unique",
          spec.name));
    }
    auto slot = std::make_unique<Slot>();
    // A model that repacks its weights at load (model/load_options.h) builds the image in an
    // unlinked file mapping, so it moves between tiers as a model file's mapping does.
    std::unique_ptr<ImageFileRegion> image;
    model::LoadOptions load_options;
    load_options.allocate_image = [&image](size_t n) -> Result<std::byte*> {
      TS_ASSIGN_OR_RETURN(image, ImageFileRegion::create(n));
      return image->mutable_bytes().data();
    };
    auto loaded = model::load_model(spec.path, load_options);
    if (!loaded.is_ok()) return loaded.status().with_context("loading fleet model " + spec.name);
    slot->model = std::shared_ptr<model::Model>(std::move(loaded).value());
    auto tok = model::load_tokenizer_for(*slot->model, spec.tokenizer);
    if (!tok.is_ok()) return tok.status().with_context("loading the tokenizer of " + spec.name);
    slot->tokenizer = std::shared_ptr<const model::Tokenizer>(std::move(tok).value());
    if (image != nullptr) {
      // Unloaded until started: the image waits in the host tier (RAM outside the process), or
      // on disk when host memory is budgeted (Unloaded models are not counted against it).
      const Tier rest = m->options_.host_budget_bytes > 0 ? Tier::kDisk : Tier::kHost;
      auto moved = image->move_to(rest, m->options_.io_threads);
      if (!moved.is_ok()) return moved.status().with_context("setting aside the image of " + spec.name);
      slot->weight_bytes = static_cast<int64_t>(image->size());
      slot->region = std::move(image);
    } else if (slot->model->file().mapping != nullptr) {
      slot->region = std::make_unique<FileBackedRegion>(slot->model->file().mapping);
      slot->weight_bytes = static_cast<int64_t>(slot->region->size());
    } else {
      slot->weight_bytes = static_cast<int64_t>(slot->model->file().tensor_bytes());
    }
    // A context larger than the model's is clamped to it (as `tessera serve --model` does).
    const int64_t model_ctx = slot->model->config().context_length;
    if (spec.engine.ctx_size <= 0 || spec.engine.ctx_size > model_ctx) spec.engine.ctx_size = model_ctx;
    slot->lifecycle = std::make_unique<ModelLifecycle>(spec.name, m->clock_);
    slot->lifecycle->add_listener([sl = slot.get()](const TransitionEvent& ev) {
      std::lock_guard<std::mutex> lock(sl->acct_mu);
      sl->integrate(ev.at_ns);
      sl->holding = holds_active_memory(ev.to);
    });
    slot->spec = std::move(spec);
    m->slots_.push_back(std::move(slot));
  }
  m->size_kv_pools();
  return m;
}

void FleetManager::size_kv_pools() {
  // A model with neither kv_blocks nor kv_memory set gets an equal share of the memory left
  // after every model's weights: of the active budget, or unbudgeted, of the engine's default
  // share of the memory available now; at least one full sequence. The engine's own sizing rule
  // (engine::size_kv_pool) turns each budget into blocks.
  int64_t weights = 0;
  for (const auto& s : slots_) weights += s->weight_bytes;
  int64_t left = -1;  // unknown: such models keep max_running full contexts
  if (options_.active_budget_bytes > 0) {
    left = std::max<int64_t>(0, options_.active_budget_bytes - weights);
  } else if (const int64_t kv = engine::default_kv_memory_bytes(weights); kv > 0) {
    left = kv;
  }
  const int64_t share = left >= 0 ? left / static_cast<int64_t>(slots_.size()) : -1;
  for (auto& s : slots_) {
    engine::EngineOptions& e = s->spec.engine;
    if (e.n_blocks == 0 && e.kv_memory_bytes == 0 && share >= 0) {
      engine::EngineOptions one = e;
      one.max_running = 1;
      one.kv_memory_bytes = 0;
      e.kv_memory_bytes = std::max<int64_t>(share, kv_pool_bytes(s->model->config(), one));
    }
    s->kv_bytes = kv_pool_bytes(s->model->config(), e);
  }
}

FleetManager::~FleetManager() { stop(); }

FleetManager::Slot* FleetManager::find(const std::string& name) const {
  for (const auto& s : slots_) {
    if (s->spec.name == name) return s.get();
  }
  return nullptr;
}

void FleetManager::add_listener(TransitionListener listener) {
  for (auto& s : slots_) s->lifecycle->add_listener(listener);
}

Status FleetManager::start() {
  if (started_.exchange(true)) return Status();
  Status first;
  if (options_.load_on_start) {
    std::lock_guard<std::mutex> control(control_mu_);
    for (auto& s : slots_) {
      if (budget_.available() < s->active_bytes()) {
        log_info("fleet: {} stays unloaded until requested ({} bytes do not fit the budget)",
                 s->spec.name, s->active_bytes());
        continue;
      }
      Status st = bring_up(*s, "start");
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
  std::lock_guard<std::mutex> control(control_mu_);
  for (auto& s : slots_) {
    fail_pending(*s, Status(ErrorCode::kUnavailable, "the server is stopping"));
    std::shared_ptr<engine::Engine> e;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->accepting = false;
      e = std::move(s->engine);
    }
    if (e) e->stop();
  }
}

void FleetManager::control_loop() {
  const auto period = std::chrono::nanoseconds(std::max<int64_t>(options_.tick_ns, 1'000'000));
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(wake_mu_);
      wake_cv_.wait_for(lock, period, [this] { return wake_ || stopping_; });
      if (stopping_) return;
      wake_ = false;
    }
    tick();
  }
}

void FleetManager::request_bring_up(Slot& s) {
  s.bring_up_requested = true;  // caller holds s.mu
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    wake_ = true;
  }
  wake_cv_.notify_one();
}

FleetView FleetManager::view(int64_t now_ns) const {
  FleetView v;
  v.now_ns = now_ns;
  v.active_budget_bytes = budget_.capacity();
  v.host_budget_bytes = options_.host_budget_bytes;
  for (const auto& s : slots_) {
    ModelView m;
    m.name = s->spec.name;
    m.state = s->lifecycle->state();
    m.state_since_ns = s->lifecycle->state_since_ns();
    m.active_bytes = s->active_bytes();
    m.host_bytes = s->weight_bytes + s->kept_bytes;
    double last = 0.0;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      last = s->last_bring_up_s;
    }
    // Without a measurement: page cache at ~4 GiB/s, disk at ~0.5 GiB/s.
    const double gib = static_cast<double>(s->weight_bytes) / (1u << 30);
    m.resume_cost_s = last > 0 ? last : gib / 4.0;
    m.reload_cost_s = std::max(m.resume_cost_s, gib / 0.5);
    m.pinned = s->spec.pinned;
    v.models.push_back(std::move(m));
  }
  return v;
}

Status FleetManager::make_room(const Slot& s, int64_t bytes) {
  FleetView v = view(clock_->now_ns());
  EvictionPlan plan;
  {
    std::lock_guard<std::mutex> lock(activity_mu_);
    plan = eviction_.choose(v, activity_, PressureTier::kActive, bytes);
  }
  for (const Decision& d : plan.decisions) {
    if (d.action != Action::kSuspend || d.model == s.spec.name) continue;
    Slot* victim = find(d.model);
    if (victim == nullptr) continue;
    if (Status st = take_down(*victim, d.reason); !st.is_ok()) {
      log_warn("fleet: suspending {} to make room failed: {}", d.model, st.message());
    }
  }
  return Status();
}

Status FleetManager::bring_up(Slot& s, std::string_view reason) {
  const ModelState from = s.lifecycle->state();
  ModelState to;
  switch (from) {
    case ModelState::kActive:
      return Status();
    case ModelState::kUnloaded:
    case ModelState::kEvicted:
    case ModelState::kFailed:
      to = ModelState::kLoading;
      break;
    case ModelState::kSuspended:
      to = ModelState::kResuming;
      break;
    default:
      return invalid_argument(fmt::format("model {} is {}: it cannot be brought up now",
                                          s.spec.name, model_state_name(from)));
  }
  const int64_t need = s.active_bytes();
  if (budget_.available() < need) TS_RETURN_IF_ERROR(make_room(s, need - budget_.available()));
  if (Status st = budget_.reserve(s.spec.name, need); !st.is_ok()) {
    return Status(ErrorCode::kResourceExhausted,
                  fmt::format("model {} does not fit the memory budget and no idle model can make "
                              "room: {}",
                              s.spec.name, st.message()));
  }
  TS_RETURN_IF_ERROR(s.lifecycle->transition(to, reason));
  const int64_t t0 = clock_->now_ns();
  auto fail = [&](const Status& why) {
    budget_.release(s.spec.name);
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.last_error = why.message();
    }
    TS_CHECK(s.lifecycle->transition(ModelState::kFailed, why.message()).is_ok());
    log_warn("fleet: {} failed to come up: {}", s.spec.name, why.message());
    return why;
  };
  if (s.region) {
    auto moved = s.region->move_to(Tier::kActive, options_.io_threads);
    if (!moved.is_ok()) return fail(moved.status().with_context("prefaulting " + s.spec.name));
  }
  engine::EngineOptions eo = s.spec.engine;
  if (options_.device && !eo.device) {
    eo.device = options_.device;
    eo.device_client = s.spec.name;
  }
  auto created = engine::Engine::create(s.model, s.tokenizer, eo);
  if (!created.is_ok()) return fail(created.status().with_context("creating the engine of " + s.spec.name));
  std::shared_ptr<engine::Engine> e = std::move(created).value();
  restore_prefix_blocks(s, *e);
  e->start();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.engine = std::move(e);
    s.accepting = true;
    s.last_error.clear();
    s.last_bring_up_s = static_cast<double>(clock_->now_ns() - t0) * 1e-9;
    TS_CHECK(s.lifecycle->transition(ModelState::kActive, reason).is_ok());
  }
  dispatch_pending(s);
  return Status();
}

void FleetManager::dispatch_pending(Slot& s) {
  std::vector<Pending> refused;
  std::vector<Status> why;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.accepting) return;
    while (!s.pending.empty()) {
      Pending p = std::move(s.pending.front());
      s.pending.pop_front();
      {
        std::lock_guard<std::mutex> ids(s.ids_mu);
        s.running[p.id] = 0;
      }
      EventSink keep = p.sink;  // the engine drops its copy on refusal
      auto r = s.engine->submit(std::move(p.request),
                                wrap_sink(s, p.id, p.submit_ns, std::move(p.sink)));
      std::lock_guard<std::mutex> ids(s.ids_mu);
      if (r.is_ok()) {
        auto it = s.running.find(p.id);
        if (it != s.running.end()) it->second = *r;
      } else {
        s.running.erase(p.id);
        p.sink = std::move(keep);
        why.push_back(r.status());
        refused.push_back(std::move(p));
      }
    }
    s.bring_up_requested = false;
  }
  for (size_t i = 0; i < refused.size(); ++i) {
    note_completion(s, clock_->now_ns(), false);
    refused[i].sink(Event{refused[i].id, error_finish(why[i])});
  }
}

void FleetManager::fail_pending(Slot& s, const Status& why) {
  std::deque<Pending> failed;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    failed.swap(s.pending);
    s.bring_up_requested = false;
  }
  for (auto& p : failed) {
    note_completion(s, clock_->now_ns(), false);
    p.sink(Event{p.id, error_finish(why)});
  }
}

void FleetManager::expire_pending(int64_t now_ns) {
  for (auto& s : slots_) {
    std::vector<Pending> expired;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      for (auto it = s->pending.begin(); it != s->pending.end();) {
        if (it->deadline_ns <= now_ns) {
          expired.push_back(std::move(*it));
          it = s->pending.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& p : expired) {
      note_completion(*s, now_ns, false);
      p.sink(Event{p.id, error_finish(Status(
                             ErrorCode::kUnavailable,
                             fmt::format("model {} did not become ready within {:.1f} s; retry later",
                                         s->spec.name, options_.request_deadline_ns * 1e-9)))});
    }
  }
}

Status FleetManager::take_down(Slot& s, std::string_view reason) {
  std::shared_ptr<engine::Engine> e;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.lifecycle->state() != ModelState::kActive) {
      return invalid_argument(fmt::format("model {} is {}, not active: it cannot be suspended",
                                          s.spec.name, model_state_name(s.lifecycle->state())));
    }
    TS_RETURN_IF_ERROR(s.lifecycle->transition(ModelState::kSuspending, reason));
    s.accepting = false;  // new requests queue from here on
    e = std::move(s.engine);
  }
  // In-flight requests finish (the engine refuses new ones meanwhile); the engine and its KV
  // pool are freed when `e` goes.
  if (e) {
    if (!e->drain(std::chrono::milliseconds(options_.request_deadline_ns / 1'000'000))) {
      log_warn("fleet: {}: in-flight requests cancelled after the drain timeout", s.spec.name);
    }
    keep_prefix_blocks(s, *e);
    e.reset();
  }
  if (s.region) {
    auto moved = s.region->move_to(Tier::kHost, options_.io_threads);
    if (!moved.is_ok()) {
      budget_.release(s.spec.name);
      {
        std::lock_guard<std::mutex> lock(s.mu);
        s.last_error = moved.status().message();
      }
      TS_CHECK(s.lifecycle->transition(ModelState::kFailed, moved.status().message()).is_ok());
      return moved.status();
    }
  }
  budget_.release(s.spec.name);
  std::lock_guard<std::mutex> lock(s.mu);
  TS_CHECK(s.lifecycle->transition(ModelState::kSuspended, reason).is_ok());
  if (!s.pending.empty()) request_bring_up(s);  // requests arrived while it drained
  return Status();
}

Status FleetManager::load(const std::string& name, std::string_view reason) {
  Slot* s = find(name);
  if (s == nullptr) return not_found("no fleet model named " + name);
  std::lock_guard<std::mutex> control(control_mu_);
  const ModelState st = s->lifecycle->state();
  if (st != ModelState::kUnloaded && st != ModelState::kEvicted && st != ModelState::kFailed) {
    return invalid_argument(fmt::format("model {} is {}: only unloaded, evicted or failed models "
                                        "load", name, model_state_name(st)));
  }
  Status r = bring_up(*s, reason);
  if (!r.is_ok()) fail_pending(*s, r);
  return r;
}

Status FleetManager::suspend(const std::string& name, std::string_view reason) {
  Slot* s = find(name);
  if (s == nullptr) return not_found("no fleet model named " + name);
  std::lock_guard<std::mutex> control(control_mu_);
  return take_down(*s, reason);
}

Status FleetManager::resume(const std::string& name, std::string_view reason) {
  Slot* s = find(name);
  if (s == nullptr) return not_found("no fleet model named " + name);
  std::lock_guard<std::mutex> control(control_mu_);
  Status r = bring_up(*s, reason);
  if (!r.is_ok()) fail_pending(*s, r);
  return r;
}

Status FleetManager::evict(const std::string& name, std::string_view reason) {
  Slot* s = find(name);
  if (s == nullptr) return not_found("no fleet model named " + name);
  std::lock_guard<std::mutex> control(control_mu_);
  return push_to_disk(*s, reason);
}

Status FleetManager::push_to_disk(Slot& s, std::string_view reason) {
  if (s.lifecycle->state() != ModelState::kSuspended) {
    return invalid_argument(fmt::format("model {} is {}: only suspended models are evicted",
                                        s.spec.name, model_state_name(s.lifecycle->state())));
  }
  if (s.region) {
    auto moved = s.region->move_to(Tier::kDisk, options_.io_threads);
    if (!moved.is_ok()) return moved.status().with_context("evicting " + s.spec.name);
  }
  if (s.kept_kv) {
    auto moved = s.kept_kv->move_to(Tier::kDisk, options_.io_threads);
    if (!moved.is_ok()) {
      log_warn("fleet: {}: dropping its kept prefix blocks: {}", s.spec.name, moved.status().message());
      drop_kept_prefix(s);
    }
  }
  return s.lifecycle->transition(ModelState::kEvicted, reason);
}

void FleetManager::drop_kept_prefix(Slot& s) {
  s.kept_kv.reset();
  s.kept_prefix = {};
  s.kept_blocks = 0;
  s.kept_bytes = 0;
}

void FleetManager::keep_prefix_blocks(Slot& s, const engine::Engine& e) {
  drop_kept_prefix(s);
  if (options_.keep_prefix_bytes <= 0) return;
  std::unique_ptr<AnonymousRegion> region;
  auto set = e.export_prefix_cache(
      options_.keep_prefix_bytes, [&region](size_t n) -> Result<std::span<std::byte>> {
        TS_ASSIGN_OR_RETURN(region, AnonymousRegion::create(n));
        return region->mutable_bytes();
      });
  if (!set.is_ok()) {
    log_warn("fleet: {}: its prefix blocks are not kept: {}", s.spec.name, set.status().message());
    return;
  }
  if (region == nullptr) return;  // nothing cached
  if (auto moved = region->move_to(Tier::kHost, 1); !moved.is_ok()) {
    log_warn("fleet: {}: its prefix blocks are not kept: {}", s.spec.name, moved.status().message());
    return;
  }
  s.kept_blocks = static_cast<int64_t>(set->blocks.size());
  s.kept_bytes = static_cast<int64_t>(region->size());
  s.kept_prefix = std::move(set).value();
  s.kept_kv = std::move(region);
}

void FleetManager::restore_prefix_blocks(Slot& s, engine::Engine& e) {
  if (s.kept_kv == nullptr) return;
  auto moved = s.kept_kv->move_to(Tier::kActive, options_.io_threads);
  if (moved.is_ok()) {
    auto taken = e.import_prefix_cache(s.kept_prefix, s.kept_kv->bytes());
    if (!taken.is_ok()) {
      log_warn("fleet: {}: kept prefix blocks not restored: {}", s.spec.name, taken.status().message());
    } else {
      log_info("fleet: {}: {} of {} kept prefix blocks restored", s.spec.name, *taken,
               s.kept_prefix.blocks.size());
    }
  } else {
    log_warn("fleet: {}: kept prefix blocks not restored: {}", s.spec.name, moved.status().message());
  }
  drop_kept_prefix(s);  // in the engine's pool now (or lost): the region goes
}

int64_t FleetManager::host_bytes() const {
  int64_t n = 0;
  for (const auto& s : slots_) {
    if (s->lifecycle->state() == ModelState::kSuspended) n += s->weight_bytes + s->kept_bytes;
  }
  return n;
}

void FleetManager::enforce_host_budget(int64_t now_ns) {
  if (options_.host_budget_bytes <= 0) return;
  const int64_t excess = host_bytes() - options_.host_budget_bytes;
  if (excess <= 0) return;
  EvictionPlan plan;
  {
    FleetView v = view(now_ns);
    std::lock_guard<std::mutex> lock(activity_mu_);
    plan = eviction_.choose(v, activity_, PressureTier::kHost, excess);
  }
  for (const Decision& d : plan.decisions) {
    Slot* victim = find(d.model);
    if (victim == nullptr) continue;
    if (Status st = push_to_disk(*victim, d.reason); !st.is_ok()) {
      log_warn("fleet: evicting {} to meet the host budget failed: {}", d.model, st.message());
    }
  }
}

void FleetManager::tick() {
  std::lock_guard<std::mutex> control(control_mu_);
  const int64_t now = clock_->now_ns();
  expire_pending(now);
  for (auto& s : slots_) {
    bool wanted = false;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      wanted = s->bring_up_requested && !s->pending.empty();
      if (!wanted) s->bring_up_requested = false;
    }
    if (!wanted) continue;
    const ModelState st = s->lifecycle->state();
    if (st == ModelState::kActive) {
      dispatch_pending(*s);
      continue;
    }
    Status r = bring_up(*s, "request");
    if (!r.is_ok()) {
      fail_pending(*s, r.code() == ErrorCode::kResourceExhausted
                           ? Status(ErrorCode::kUnavailable, r.message())
                           : r);
    }
  }
  apply_idle_policy(now);
  enforce_host_budget(now);
}

void FleetManager::apply_idle_policy(int64_t now) {
  // One decide() per distinct policy, over the whole view (a policy may weigh the fleet), keeping
  // only its decisions for the models it governs.
  std::vector<const IdlePolicy*> policies;
  for (const auto& s : slots_) {
    const IdlePolicy* p = idle_policy_of(*s);
    if (p != nullptr && std::find(policies.begin(), policies.end(), p) == policies.end()) {
      policies.push_back(p);
    }
  }
  if (policies.empty()) return;
  std::vector<Decision> decisions;
  {
    FleetView v = view(now);
    std::lock_guard<std::mutex> lock(activity_mu_);
    for (const IdlePolicy* p : policies) {
      for (Decision& d : p->decide(v, activity_)) {
        const Slot* s = find(d.model);
        if (s != nullptr && idle_policy_of(*s) == p) decisions.push_back(std::move(d));
      }
    }
  }
  for (const Decision& d : decisions) {
    Slot* s = find(d.model);
    if (s == nullptr) continue;
    Status r;
    switch (d.action) {
      case Action::kSuspend:
        if (s->lifecycle->state() == ModelState::kActive) r = take_down(*s, d.reason);
        break;
      case Action::kPrewarm:
        if (budget_.available() >= s->active_bytes()) r = bring_up(*s, d.reason);
        break;
      case Action::kEvict:
        if (s->lifecycle->state() == ModelState::kSuspended) r = push_to_disk(*s, d.reason);
        break;
    }
    if (!r.is_ok()) log_warn("fleet: {} {} failed: {}", action_name(d.action), d.model, r.message());
  }
}

const IdlePolicy* FleetManager::idle_policy_of(const Slot& s) const {
  return s.spec.idle_policy ? s.spec.idle_policy.get() : options_.idle_policy.get();
}

void FleetManager::note_arrival(Slot& s, int64_t now_ns, bool cold) {
  {
    std::lock_guard<std::mutex> lock(activity_mu_);
    activity_.on_arrival(s.spec.name, now_ns);
  }
  std::lock_guard<std::mutex> lock(s.acct_mu);
  s.integrate(now_ns);
  ++s.in_flight;
  if (cold) ++s.cold_starts;
}

void FleetManager::note_completion(Slot& s, int64_t now_ns, bool slo_met) {
  {
    std::lock_guard<std::mutex> lock(activity_mu_);
    activity_.on_completion(s.spec.name, now_ns);
  }
  std::lock_guard<std::mutex> lock(s.acct_mu);
  s.integrate(now_ns);
  s.in_flight = std::max(0, s.in_flight - 1);
  ++s.finished;
  if (slo_met) ++s.slo_met;
}

EventSink FleetManager::wrap_sink(Slot& s, RequestId fleet_id, int64_t submit_ns, EventSink sink) {
  // The TTFT SLO counts from the fleet's submit (a resume's wait included) to the first token,
  // or to the finish of a request that ends without one (an error never meets it).
  return [this, slot = &s, fleet_id, submit_ns, sink = std::move(sink),
          first_ns = int64_t{-1}](Event&& ev) mutable {
    ev.id = fleet_id;
    const int64_t now = clock_->now_ns();
    if (first_ns < 0 && !ev.is_finish()) first_ns = now;
    if (ev.is_finish()) {
      {
        std::lock_guard<std::mutex> ids(slot->ids_mu);
        slot->running.erase(fleet_id);
      }
      const auto& f = std::get<FinishEvent>(ev.body);
      const bool ok = f.reason == FinishReason::kStop || f.reason == FinishReason::kLength;
      const int64_t ttft = (first_ns < 0 ? now : first_ns) - submit_ns;
      note_completion(*slot, now, ok && ttft <= slot->spec.engine.ttft_slo_ns);
    }
    sink(std::move(ev));
  };
}

Result<RequestId> FleetManager::submit(const std::string& name, engine::Request request,
                                       EventSink sink) {
  Slot* s = find(name);
  if (s == nullptr) return not_found("no fleet model named " + name);
  if (stopped_.load()) return Status(ErrorCode::kUnavailable, "the fleet is stopping");
  const RequestId id = next_id_.fetch_add(1);
  const int64_t now = clock_->now_ns();
  std::unique_lock<std::mutex> lock(s->mu);
  note_arrival(*s, now, /*cold=*/!s->accepting);
  if (s->accepting) {
    {
      std::lock_guard<std::mutex> ids(s->ids_mu);
      s->running[id] = 0;
    }
    auto r = s->engine->submit(std::move(request), wrap_sink(*s, id, now, std::move(sink)));
    std::unique_lock<std::mutex> ids(s->ids_mu);
    if (!r.is_ok()) {
      s->running.erase(id);
      ids.unlock();
      note_completion(*s, clock_->now_ns(), false);
      return r.status();
    }
    auto it = s->running.find(id);
    if (it != s->running.end()) it->second = *r;
    return id;
  }
  s->pending.push_back(Pending{id, std::move(request), std::move(sink), now,
                               now + options_.request_deadline_ns});
  request_bring_up(*s);
  return id;
}

void FleetManager::cancel(const std::string& name, RequestId id) {
  Slot* s = find(name);
  if (s == nullptr) return;
  std::shared_ptr<engine::Engine> e;
  RequestId engine_id = 0;
  Pending cancelled;
  bool was_pending = false;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    for (auto it = s->pending.begin(); it != s->pending.end(); ++it) {
      if (it->id == id) {
        cancelled = std::move(*it);
        s->pending.erase(it);
        was_pending = true;
        break;
      }
    }
    if (!was_pending) {
      e = s->engine;
      std::lock_guard<std::mutex> ids(s->ids_mu);
      auto it = s->running.find(id);
      if (it != s->running.end()) engine_id = it->second;
    }
  }
  if (was_pending) {
    note_completion(*s, clock_->now_ns(), false);
    FinishEvent f;
    f.reason = FinishReason::kCancelled;
    cancelled.sink(Event{id, std::move(f)});
    return;
  }
  if (e && engine_id != 0) e->cancel(engine_id);
}

engine::EngineStats FleetManager::stats(const std::string& name) const {
  Slot* s = find(name);
  if (s == nullptr) return {};
  std::shared_ptr<engine::Engine> e;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    e = s->engine;
  }
  return e ? e->stats() : engine::EngineStats{};
}

std::vector<ModelStatus> FleetManager::status() const {
  std::vector<ModelStatus> out;
  for (const auto& s : slots_) out.push_back(*status(s->spec.name));
  return out;
}

Result<ModelStatus> FleetManager::status(const std::string& name) const {
  Slot* s = find(name);
  if (s == nullptr) return not_found("no fleet model named " + name);
  ModelStatus m;
  m.name = s->spec.name;
  m.path = s->spec.path;
  m.state = s->lifecycle->state();
  m.time_in_state_s =
      static_cast<double>(clock_->now_ns() - s->lifecycle->state_since_ns()) * 1e-9;
  m.active_bytes = s->active_bytes();
  m.weight_bytes = s->weight_bytes;
  m.kept_prefix_blocks = s->kept_blocks;
  m.kept_prefix_bytes = s->kept_bytes;
  m.resumes = s->lifecycle->entries(ModelState::kResuming);
  m.loads = s->lifecycle->entries(ModelState::kLoading);
  m.pinned = s->spec.pinned;
  const IdlePolicy* policy = idle_policy_of(*s);
  m.idle_policy = policy != nullptr ? std::string(policy->name()) : "none";
  m.ttft_slo_s = static_cast<double>(s->spec.engine.ttft_slo_ns) * 1e-9;
  {
    std::lock_guard<std::mutex> acct(s->acct_mu);
    s->integrate(clock_->now_ns());
    m.memory_seconds = s->memory_s;
    m.idle_memory_seconds = s->idle_memory_s;
    m.cold_starts = s->cold_starts;
    m.finished = s->finished;
    m.slo_met = s->slo_met;
    m.in_flight = s->in_flight;
  }
  std::lock_guard<std::mutex> lock(s->mu);
  m.last_bring_up_s = s->last_bring_up_s;
  m.queued = static_cast<int64_t>(s->pending.size());
  m.last_error = s->last_error;
  return m;
}

ModelState FleetManager::state(const std::string& name) const {
  Slot* s = find(name);
  return s == nullptr ? ModelState::kUnloaded : s->lifecycle->state();
}

std::vector<std::string> FleetManager::names() const {
  std::vector<std::string> out;
  for (const auto& s : slots_) out.push_back(s->spec.name);
  return out;
}

const model::Tokenizer& FleetManager::tokenizer(const std::string& name) const {
  return *shared_tokenizer(name);
}

std::shared_ptr<const model::Tokenizer> FleetManager::shared_tokenizer(const std::string& name) const {
  Slot* s = find(name);
  TS_CHECK_MSG(s != nullptr, "FleetManager::tokenizer: unknown model");
  return s->tokenizer;
}

const model::Metadata& FleetManager::metadata(const std::string& name) const {
  Slot* s = find(name);
  TS_CHECK_MSG(s != nullptr, "FleetManager::metadata: unknown model");
  return s->model->file().metadata;
}

int64_t FleetManager::context_length(const std::string& name) const {
  Slot* s = find(name);
  TS_CHECK_MSG(s != nullptr, "FleetManager::context_length: unknown model");
  const int64_t model_ctx = s->model->config().context_length;
  return s->spec.engine.ctx_size > 0 ? std::min(s->spec.engine.ctx_size, model_ctx) : model_ctx;
}

}  // namespace tessera::fleet
