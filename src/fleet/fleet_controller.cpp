#include "tessera/fleet/fleet_controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "tessera/base/check.h"
#include "tessera/base/log.h"

namespace tessera::fleet {

std::string_view move_name(Move m) {
  switch (m) {
    case Move::kLoad: return "load";
    case Move::kResume: return "resume";
    case Move::kSuspend: return "suspend";
    case Move::kEvict: return "evict";
  }
  return "?";
}

struct FleetController::Entry {
  ControlledModel spec;
  ModelIndex parent = -1;             // an adapter's base
  std::vector<ModelIndex> children;   // a base's adapters
  // A base whose take-down waits for its adapters to leave active memory (see the header).
  bool take_down_pending = false;
  std::string take_down_reason;
  std::unique_ptr<ModelLifecycle> lifecycle;
  ModelActivity* activity = nullptr;  // its record in activity_ (stable)
  // The lifecycle's state and its entry time, mirrored by its listener (read on every view
  // without the lifecycle's lock).
  ModelState state = ModelState::kUnloaded;
  int64_t state_since_ns = 0;
  bool moving = false;
  Move move = Move::kLoad;
  int64_t move_started_ns = 0;
  PendingRequests pending;
  // Bring the model up at the next tick: requests wait for it (by_request), or an operator
  // bring-up waits for the suspensions that make its room.
  bool want_up = false;
  bool by_request = false;
  bool waiting_for_room = false;  // wanted, but the room is held by busy models
  std::string last_error;
  int32_t failures = 0;  // consecutive failed bring-ups
  int64_t retry_at_ns = 0;
  double last_bring_up_s = 0.0;
  int64_t resumes_done = 0, suspends_done = 0;
  double resume_seconds = 0.0, suspend_seconds = 0.0;
  // The host's costs, read again after each completed move (ModelHost::costs).
  ModelCosts costs;
  bool costs_stale = true;

  // Usage accounting: memory-seconds integrate active_bytes over the states that hold active
  // memory; the idle part over the time with nothing in flight.
  int64_t acct_ns = -1;
  bool holding = false;
  int32_t in_flight = 0;
  double memory_s = 0.0;
  double idle_memory_s = 0.0;
  int64_t cold_starts = 0;
  int64_t finished = 0;
  int64_t slo_met = 0;

  // Memory-seconds (total, idle) accrued from acct_ns to now_ns, not yet added.
  std::pair<double, double> accrued(int64_t now_ns) const {
    if (acct_ns < 0 || now_ns <= acct_ns || !holding) return {0.0, 0.0};
    const double held = static_cast<double>(spec.active_bytes) *
                        static_cast<double>(now_ns - acct_ns) * 1e-9;
    return {held, in_flight == 0 ? held : 0.0};
  }
  void integrate(int64_t now_ns) {
    const auto [held, idle] = accrued(now_ns);
    memory_s += held;
    idle_memory_s += idle;
    acct_ns = std::max(acct_ns, now_ns);
  }
};

FleetController::FleetController(ControllerOptions options, ModelHost* host, const Clock* clock,
                                 Timer* timer)
    : options_(std::move(options)),
      host_(host),
      clock_(clock),
      timer_(timer),
      budget_(options_.active_budget_bytes),
      eviction_(options_.eviction),
      activity_(options_.histogram) {}

FleetController::~FleetController() = default;

Result<std::unique_ptr<FleetController>> FleetController::create(
    std::vector<ControlledModel> models, ControllerOptions options, ModelHost* host,
    const Clock* clock, Timer* timer) {
  TS_CHECK(host != nullptr && clock != nullptr);
  if (models.empty()) return invalid_argument("the fleet has no models");
  if (options.active_budget_bytes < 0 || options.host_budget_bytes < 0 ||
      options.device_budget_bytes < 0) {
    return invalid_argument("memory budgets must be >= 0");
  }
  std::unique_ptr<FleetController> c(new FleetController(std::move(options), host, clock, timer));
  std::set<std::string> seen;
  for (auto& spec : models) {
    if (spec.name.empty()) return invalid_argument("a fleet model has an empty name");
    if (!seen.insert(spec.name).second) {
      return invalid_argument(fmt::format(
          "two fleet models are named '{}': names come from file stems and must be unique",
          spec.name));
    }
    auto e = std::make_unique<Entry>();
    e->lifecycle = std::make_unique<ModelLifecycle>(spec.name, clock);
    const auto index = static_cast<ModelIndex>(c->models_.size());
    e->lifecycle->add_listener([ctl = c.get(), entry = e.get(), index](const TransitionEvent& ev) {
      entry->integrate(ev.at_ns);
      entry->holding = holds_active_memory(ev.to);
      entry->state = ev.to;
      entry->state_since_ns = ev.at_ns;
      ctl->sync_view(index);
    });
    e->state_since_ns = e->lifecycle->state_since_ns();
    e->acct_ns = clock->now_ns();
    e->activity = &c->activity_.track(spec.name);
    ModelView v;
    v.name = spec.name;
    c->view_.models.push_back(std::move(v));
    if (spec.device >= 0 && !c->device_budgets_.count(spec.device)) {
      c->device_budgets_.emplace(spec.device,
                                 std::make_unique<MemoryBudget>(c->options_.device_budget_bytes));
    }
    e->spec = std::move(spec);
    c->models_.push_back(std::move(e));
  }
  // Adapters hang under their base (resolved once every name is known).
  for (size_t i = 0; i < c->models_.size(); ++i) {
    Entry& e = *c->models_[i];
    if (e.spec.parent.empty()) continue;
    const ModelIndex p = c->find(e.spec.parent);
    if (p < 0) {
      return invalid_argument(fmt::format("adapter {}: the fleet has no base model named '{}'",
                                          e.spec.name, e.spec.parent));
    }
    if (!c->at(p).spec.parent.empty()) {
      return invalid_argument(fmt::format("adapter {}: its base {} is itself an adapter",
                                          e.spec.name, e.spec.parent));
    }
    e.parent = p;
    c->at(p).children.push_back(static_cast<ModelIndex>(i));
  }
  for (const auto& e : c->models_) {
    const IdlePolicy* p = c->policy_of(*e);
    if (p != nullptr && std::find(c->policies_.begin(), c->policies_.end(), p) == c->policies_.end()) {
      c->policies_.push_back(p);
    }
  }
  // Models whose files did not open start Failed (through Loading: the attempt was a load).
  for (auto& e : c->models_) {
    if (e->spec.failed.empty()) continue;
    TS_CHECK(e->lifecycle->transition(ModelState::kLoading, "start").is_ok());
    TS_CHECK(e->lifecycle->transition(ModelState::kFailed, e->spec.failed).is_ok());
    e->last_error = e->spec.failed;
    e->failures = 1;
    e->retry_at_ns = clock->now_ns() + c->options_.retry_backoff_ns;
  }
  for (size_t i = 0; i < c->models_.size(); ++i) c->sync_view(static_cast<ModelIndex>(i));
  return c;
}

FleetController::Entry& FleetController::at(ModelIndex m) {
  TS_CHECK(m >= 0 && m < size());
  return *models_[static_cast<size_t>(m)];
}
const FleetController::Entry& FleetController::at(ModelIndex m) const {
  TS_CHECK(m >= 0 && m < size());
  return *models_[static_cast<size_t>(m)];
}

ModelIndex FleetController::find(std::string_view name) const {
  for (size_t i = 0; i < models_.size(); ++i) {
    if (models_[i]->spec.name == name) return static_cast<ModelIndex>(i);
  }
  return -1;
}

const ControlledModel& FleetController::model(ModelIndex m) const { return at(m).spec; }
ModelIndex FleetController::parent(ModelIndex m) const { return at(m).parent; }
const std::vector<ModelIndex>& FleetController::adapters(ModelIndex m) const {
  return at(m).children;
}
ModelState FleetController::state(ModelIndex m) const { return at(m).lifecycle->state(); }

void FleetController::add_listener(TransitionListener listener) {
  for (auto& e : models_) e->lifecycle->add_listener(listener);
}

ControlledStatus FleetController::status(ModelIndex m) const {
  const Entry& e = at(m);
  ControlledStatus s;
  s.state = e.state;
  s.state_since_ns = e.lifecycle->state_since_ns();
  s.moving = e.moving;
  s.queued = e.pending.size();
  s.resumes = e.lifecycle->entries(ModelState::kResuming);
  s.loads = e.lifecycle->entries(ModelState::kLoading);
  s.last_bring_up_s = e.last_bring_up_s;
  s.resumes_done = e.resumes_done;
  s.suspends_done = e.suspends_done;
  s.resume_seconds = e.resume_seconds;
  s.suspend_seconds = e.suspend_seconds;
  s.last_error = e.last_error;
  s.retry_at_ns = e.retry_at_ns;
  const auto [held, idle] = e.accrued(clock_->now_ns());
  s.memory_seconds = e.memory_s + held;
  s.idle_memory_seconds = e.idle_memory_s + idle;
  s.cold_starts = e.cold_starts;
  s.in_flight = e.in_flight;
  s.finished = e.finished;
  s.slo_met = e.slo_met;
  return s;
}

const IdlePolicy* FleetController::policy_of(const Entry& e) const {
  return e.spec.idle_policy ? e.spec.idle_policy.get() : options_.idle_policy.get();
}

const ModelCosts& FleetController::costs_of(ModelIndex m) const {
  Entry& e = *models_[static_cast<size_t>(m)];
  if (e.costs_stale) {
    e.costs = host_->costs(m);
    e.costs_stale = false;
  }
  return e.costs;
}

void FleetController::sync_view(ModelIndex i) const {
  if (static_cast<size_t>(i) >= view_.models.size()) return;  // still being created
  const Entry& e = *models_[static_cast<size_t>(i)];
  const ModelCosts& c = costs_of(i);
  ModelView& m = view_.models[static_cast<size_t>(i)];
  m.state = e.state;
  m.state_since_ns = e.state_since_ns;
  m.active_bytes = e.spec.active_bytes;
  m.host_bytes = c.host_bytes;
  m.resume_cost_s = e.last_bring_up_s > 0 ? e.last_bring_up_s : c.resume_estimate_s;
  m.reload_cost_s = std::max(m.resume_cost_s, c.reload_estimate_s);
  // A model with a move in flight is not the policies' to move again.
  m.pinned = e.spec.pinned || e.moving || e.take_down_pending;
  m.activity = e.activity;
}

const FleetView& FleetController::view() const {
  // Each model's row is kept current where it changes (sync_view); only the time is new here.
  // The simulator asks for the view on every tick of every node.
  FleetView& v = view_;
  v.now_ns = clock_->now_ns();
  v.active_budget_bytes = budget_.capacity();
  v.host_budget_bytes = options_.host_budget_bytes;
  return v;
}

bool FleetController::view_is_current() const {
  for (size_t i = 0; i < models_.size(); ++i) {
    const ModelView before = view_.models[i];
    sync_view(static_cast<ModelIndex>(i));
    const ModelView& m = view_.models[i];
    if (before.state != m.state || before.state_since_ns != m.state_since_ns ||
        before.active_bytes != m.active_bytes || before.host_bytes != m.host_bytes ||
        before.resume_cost_s != m.resume_cost_s || before.reload_cost_s != m.reload_cost_s ||
        before.pinned != m.pinned || before.activity != m.activity) {
      return false;
    }
  }
  return true;
}

void FleetController::forget_activity() {
  const int64_t now = clock_->now_ns();
  for (const auto& e : models_) ActivityTracker::forget(*e->activity, now);
  if (timer_ != nullptr) timer_->wake_at(now);  // idle clocks restarted: decisions move
}

void FleetController::note_arrival(Entry& e, int64_t now_ns, bool cold) {
  ActivityTracker::arrive(*e.activity, now_ns);
  if (e.parent >= 0) ActivityTracker::arrive(*at(e.parent).activity, now_ns);
  e.integrate(now_ns);
  ++e.in_flight;
  if (cold) ++e.cold_starts;
}

void FleetController::note_completion(Entry& e, int64_t now_ns, bool slo_met) {
  ActivityTracker::complete(*e.activity, now_ns);
  if (e.parent >= 0) ActivityTracker::complete(*at(e.parent).activity, now_ns);
  e.integrate(now_ns);
  e.in_flight = std::max(0, e.in_flight - 1);
  ++e.finished;
  if (slo_met) ++e.slo_met;
  // A model that just went idle can make room for one that waits for it.
  if (e.in_flight == 0 && timer_ != nullptr && any_waiting_for_room_) {
    for (const auto& x : models_) {
      if (x->waiting_for_room && x->want_up) {
        timer_->wake_at(now_ns);
        break;
      }
    }
  }
}

Status FleetController::unavailable_while_failed(const Entry& e, int64_t now_ns) const {
  return Status(ErrorCode::kUnavailable,
                fmt::format("model {} is unavailable: it failed to load ({}); the next attempt is "
                            "in {:.0f} s",
                            e.spec.name, e.last_error,
                            std::ceil(std::max<int64_t>(0, e.retry_at_ns - now_ns) * 1e-9)));
}

Admission FleetController::submit(ModelIndex m, engine::RequestId id, Status* why) {
  Entry& e = at(m);
  const int64_t now = clock_->now_ns();
  const ModelState st = e.state;
  if (st == ModelState::kActive) {
    note_arrival(e, now, /*cold=*/false);
    Status r = host_->dispatch(m, id);
    if (r.is_ok()) return Admission::kDispatched;
    note_completion(e, now, false);
    if (why != nullptr) *why = std::move(r);
    return Admission::kRefused;
  }
  note_arrival(e, now, /*cold=*/true);
  if (st == ModelState::kFailed && !e.moving && now < e.retry_at_ns) {
    note_completion(e, now, false);
    if (why != nullptr) *why = unavailable_while_failed(e, now);
    return Admission::kRefused;
  }
  if (e.parent >= 0) {
    const Entry& b = at(e.parent);
    if (b.state == ModelState::kFailed && !b.moving && now < b.retry_at_ns) {
      note_completion(e, now, false);
      if (why != nullptr) *why = unavailable_while_failed(b, now);
      return Admission::kRefused;
    }
  }
  e.pending.push({id, now, now + options_.request_deadline_ns});
  ++queued_total_;
  if (!e.want_up) {
    e.want_up = true;
    e.by_request = true;
  }
  if (timer_ != nullptr) timer_->wake_at(now);
  return Admission::kQueued;
}

void FleetController::finished(ModelIndex m, engine::RequestId /*id*/, bool slo_met,
                               int64_t at_ns) {
  note_completion(at(m), at_ns >= 0 ? at_ns : clock_->now_ns(), slo_met);
}

void FleetController::refuse_all_queued(const Status& why) {
  for (size_t i = 0; i < models_.size(); ++i) refuse_queue(static_cast<ModelIndex>(i), why);
}

const MemoryBudget* FleetController::device_budget(int device) const {
  const auto it = device_budgets_.find(device);
  return it == device_budgets_.end() ? nullptr : it->second.get();
}

const MemoryBudget& FleetController::budget_for(ModelIndex m) const {
  const Entry& e = at(m);
  if (e.spec.device < 0) return budget_;
  return *device_budgets_.at(e.spec.device);
}

MemoryBudget& FleetController::budget_of(const Entry& e) {
  if (e.spec.device < 0) return budget_;
  return *device_budgets_.at(e.spec.device);
}

Status FleetController::resize(ModelIndex m, int64_t active_bytes, int64_t weight_bytes) {
  Entry& e = at(m);
  MemoryBudget& budget = budget_of(e);
  if (budget.held_by(e.spec.name) > 0 || holds_active_memory(e.state)) {
    budget.release(e.spec.name);
    if (Status st = budget.reserve(e.spec.name, active_bytes); !st.is_ok()) {
      return Status(ErrorCode::kResourceExhausted,
                    fmt::format("model {} needs {} bytes once opened: {}", e.spec.name,
                                active_bytes, st.message()));
    }
  }
  e.integrate(clock_->now_ns());
  e.spec.active_bytes = active_bytes;
  e.spec.weight_bytes = weight_bytes;
  e.costs_stale = true;
  sync_view(m);
  return Status();
}

bool FleetController::cancel(ModelIndex m, engine::RequestId id) {
  Entry& e = at(m);
  if (!e.pending.remove(id)) return false;
  --queued_total_;
  note_completion(e, clock_->now_ns(), false);
  if (e.pending.empty() && e.by_request) e.want_up = false;
  host_->reject(m, id, Status(ErrorCode::kCancelled, "cancelled"));
  return true;
}

void FleetController::dispatch_queue(ModelIndex m) {
  Entry& e = at(m);
  const std::vector<PendingRequest> queued = e.pending.take_all();
  queued_total_ -= static_cast<int64_t>(queued.size());
  for (const PendingRequest& p : queued) {
    Status r = host_->dispatch(m, p.id);
    if (!r.is_ok()) {
      note_completion(e, clock_->now_ns(), false);
      host_->reject(m, p.id, r);
    }
  }
}

void FleetController::refuse_queue(ModelIndex m, const Status& why) {
  Entry& e = at(m);
  e.want_up = false;
  const std::vector<PendingRequest> queued = e.pending.take_all();
  queued_total_ -= static_cast<int64_t>(queued.size());
  for (const PendingRequest& p : queued) {
    note_completion(e, clock_->now_ns(), false);
    host_->reject(m, p.id, why);
  }
}

int64_t FleetController::freeing_bytes(const Entry& same) const {
  int64_t n = 0;
  for (const auto& e : models_) {
    if (e->spec.device != same.spec.device) continue;
    // A base waiting for its adapters to leave is as good as suspending.
    if (e->state == ModelState::kSuspending ||
        (e->take_down_pending && e->state == ModelState::kActive)) {
      n += e->spec.active_bytes;
    }
  }
  return n;
}

int64_t FleetController::make_room(ModelIndex for_model, int64_t bytes) {
  // An adapter's base must stay up for it: the policy sees it pinned.
  // Models whose bytes count against another budget (the CPU's, another device's) free nothing
  // here: the policy sees them pinned too.
  const FleetView* seen = &view();
  FleetView base_pinned;
  const int device = at(for_model).spec.device;
  bool mixed = false;
  for (const auto& e : models_) mixed = mixed || e->spec.device != device;
  if (const ModelIndex base = at(for_model).parent; base >= 0 || mixed) {
    base_pinned = *seen;
    if (base >= 0) base_pinned.models[static_cast<size_t>(base)].pinned = true;
    for (size_t i = 0; i < models_.size(); ++i) {
      if (models_[i]->spec.device != device) base_pinned.models[i].pinned = true;
    }
    seen = &base_pinned;
  }
  const EvictionPlan plan = eviction_.choose(*seen, activity_, PressureTier::kActive, bytes);
  int64_t freed = 0;
  for (const Decision& d : plan.decisions) {
    const ModelIndex v = find(d.model);
    if (d.action != Action::kSuspend || v < 0 || v == for_model ||
        at(v).state != ModelState::kActive) {
      continue;
    }
    if (Status st = take_down(v, d.reason); !st.is_ok()) {
      log_warn("fleet: suspending {} to make room failed: {}", d.model, st.message());
      continue;
    }
    freed += at(v).spec.active_bytes;
  }
  return freed;
}

Status FleetController::bring_up_base_of(const Entry& adapter, std::string_view reason,
                                         bool* ready) {
  Entry& b = at(adapter.parent);
  const auto base_ready = [&b] {
    return b.state == ModelState::kActive && !b.moving && !b.take_down_pending;
  };
  *ready = base_ready();
  if (*ready) return Status();
  const int64_t now = clock_->now_ns();
  if (b.state == ModelState::kFailed && !b.moving && now < b.retry_at_ns) {
    return unavailable_while_failed(b, now);
  }
  // A base on its way down (waiting for its adapters) goes down first, then comes back.
  if (!b.take_down_pending) TS_RETURN_IF_ERROR(bring_up(adapter.parent, reason));
  *ready = base_ready();  // a host may complete the move inside begin_move()
  return Status();
}

Status FleetController::bring_up(ModelIndex m, std::string_view reason) {
  Entry& e = at(m);
  const ModelState from = e.state;
  if (from == ModelState::kActive) return Status();
  if (e.moving) {
    if (from == ModelState::kLoading || from == ModelState::kResuming) return Status();
    // Suspending or being evicted: come back once that is done.
    e.want_up = true;
    return Status();
  }
  if (e.parent >= 0) {
    bool ready = false;
    TS_RETURN_IF_ERROR(bring_up_base_of(e, reason, &ready));
    if (!ready) {
      e.want_up = true;  // retried at the tick after the base's move completes
      return Status();
    }
  }
  Move move;
  ModelState to;
  switch (from) {
    case ModelState::kUnloaded:
    case ModelState::kEvicted:
    case ModelState::kFailed:
      move = Move::kLoad;
      to = ModelState::kLoading;
      break;
    case ModelState::kSuspended:
      move = Move::kResume;
      to = ModelState::kResuming;
      break;
    default:
      return invalid_argument(fmt::format("model {} is {}: it cannot be brought up now",
                                          e.spec.name, model_state_name(from)));
  }
  const int64_t need = e.spec.active_bytes;
  MemoryBudget& budget = budget_of(e);
  if (budget.available() < need) {
    const int64_t shortfall = need - budget.available();
    const int64_t freeing = freeing_bytes(e);
    if (freeing < shortfall) make_room(m, shortfall - freeing);
    if (budget.available() < need) {
      if (budget.available() + freeing_bytes(e) >= need) {
        e.want_up = true;  // retried when the suspensions it waits for are done
        return Status();
      }
      // The room is held by models busy serving: requests wait for one of them to go idle
      // (their deadline bounds the wait); a model larger than the whole budget never fits.
      if (requests_wait_for(e) && need <= budget.capacity()) {
        e.want_up = true;
        e.waiting_for_room = true;
        any_waiting_for_room_ = true;
        return Status();
      }
    }
  }
  if (Status st = budget.reserve(e.spec.name, need); !st.is_ok()) {
    return Status(ErrorCode::kResourceExhausted,
                  fmt::format("model {} does not fit the {} budget and no idle model can make "
                              "room: {}",
                              e.spec.name,
                              e.spec.device < 0 ? std::string("memory")
                                                : fmt::format("opencl:{} device memory", e.spec.device),
                              st.message()));
  }
  TS_RETURN_IF_ERROR(e.lifecycle->transition(to, reason));
  e.want_up = false;
  e.waiting_for_room = false;
  e.moving = true;
  e.move = move;
  e.move_started_ns = clock_->now_ns();
  sync_view(m);
  host_->begin_move(m, move);
  return Status();
}

bool FleetController::adapters_hold_active_memory(const Entry& base) const {
  for (const ModelIndex c : base.children) {
    if (holds_active_memory(at(c).state)) return true;
  }
  return false;
}

bool FleetController::requests_wait_for(const Entry& e) const {
  if (e.by_request && !e.pending.empty()) return true;
  for (const ModelIndex c : e.children) {
    if (at(c).want_up && !at(c).pending.empty()) return true;
  }
  return false;
}

void FleetController::finish_pending_take_down(ModelIndex base) {
  Entry& b = at(base);
  if (!b.take_down_pending || adapters_hold_active_memory(b)) return;
  b.take_down_pending = false;
  sync_view(base);
  if (b.state != ModelState::kActive || b.moving) return;
  if (Status st = take_down(base, b.take_down_reason); !st.is_ok()) {
    log_warn("fleet: suspending {} after its adapters failed: {}", b.spec.name, st.message());
  }
}

Status FleetController::take_down(ModelIndex m, std::string_view reason) {
  Entry& e = at(m);
  if (e.take_down_pending) return Status();  // already on its way down
  if (e.state != ModelState::kActive) {
    return invalid_argument(fmt::format("model {} is {}, not active: it cannot be suspended",
                                        e.spec.name, model_state_name(e.state)));
  }
  if (!e.children.empty()) {
    // Adapters leave first (each draining its own requests); the base follows once none holds
    // active memory (finish_pending_take_down, from their move_done).
    for (const ModelIndex c : e.children) {
      if (at(c).state != ModelState::kActive || at(c).moving) continue;
      if (Status st = take_down(c, fmt::format("base {} suspending", e.spec.name)); !st.is_ok()) {
        log_warn("fleet: suspending adapter {} failed: {}", at(c).spec.name, st.message());
      }
    }
    if (adapters_hold_active_memory(e)) {
      e.take_down_pending = true;
      e.take_down_reason = std::string(reason);
      sync_view(m);
      return Status();
    }
  }
  TS_RETURN_IF_ERROR(e.lifecycle->transition(ModelState::kSuspending, reason));
  e.moving = true;
  e.move = Move::kSuspend;
  e.move_started_ns = clock_->now_ns();
  sync_view(m);
  host_->begin_move(m, Move::kSuspend);
  return Status();
}

Status FleetController::push_to_disk(ModelIndex m, std::string_view /*reason*/) {
  Entry& e = at(m);
  if (e.state != ModelState::kSuspended || e.moving) {
    return invalid_argument(fmt::format("model {} is {}: only suspended models are evicted",
                                        e.spec.name, model_state_name(e.state)));
  }
  e.moving = true;
  e.move = Move::kEvict;
  e.move_started_ns = clock_->now_ns();
  sync_view(m);
  host_->begin_move(m, Move::kEvict);
  return Status();
}

void FleetController::move_done(ModelIndex m, const Status& result) {
  Entry& e = at(m);
  TS_CHECK_MSG(e.moving, "FleetController::move_done without a move in flight");
  e.moving = false;
  e.costs_stale = true;
  const int64_t now = clock_->now_ns();
  const std::string reason(move_name(e.move));
  switch (e.move) {
    case Move::kLoad:
    case Move::kResume:
      if (result.is_ok()) {
        e.last_bring_up_s = static_cast<double>(now - e.move_started_ns) * 1e-9;
        if (e.move == Move::kResume) {
          ++e.resumes_done;
          e.resume_seconds += e.last_bring_up_s;
        }
        e.failures = 0;
        e.last_error.clear();
        TS_CHECK(e.lifecycle->transition(ModelState::kActive, reason + " done").is_ok());
        dispatch_queue(m);
      } else {
        budget_of(e).release(e.spec.name);
        e.last_error = result.message();
        ++e.failures;
        const int64_t backoff = std::min(
            options_.max_retry_backoff_ns,
            options_.retry_backoff_ns << std::min<int32_t>(e.failures - 1, 20));
        e.retry_at_ns = now + backoff;
        TS_CHECK(e.lifecycle->transition(ModelState::kFailed, result.message()).is_ok());
        log_warn("fleet: {} failed to come up: {}", e.spec.name, result.message());
        refuse_queue(m, unavailable_while_failed(e, now));
        for (const ModelIndex c : e.children) {
          if (at(c).want_up && !at(c).moving) refuse_queue(c, unavailable_while_failed(e, now));
        }
      }
      break;
    case Move::kSuspend:
      budget_of(e).release(e.spec.name);
      if (result.is_ok()) {
        ++e.suspends_done;
        e.suspend_seconds += static_cast<double>(now - e.move_started_ns) * 1e-9;
        TS_CHECK(e.lifecycle->transition(ModelState::kSuspended, reason + " done").is_ok());
        if (!e.pending.empty()) e.want_up = true;  // requests arrived while it drained
      } else {
        e.last_error = result.message();
        ++e.failures;
        e.retry_at_ns = now + options_.retry_backoff_ns;
        TS_CHECK(e.lifecycle->transition(ModelState::kFailed, result.message()).is_ok());
        refuse_queue(m, unavailable_while_failed(e, now));
      }
      break;
    case Move::kEvict:
      if (result.is_ok()) {
        TS_CHECK(e.lifecycle->transition(ModelState::kEvicted, reason).is_ok());
      } else {
        log_warn("fleet: evicting {} failed: {}", e.spec.name, result.message());
      }
      break;
  }
  sync_view(m);
  if (e.parent >= 0 && at(e.parent).take_down_pending) {
    // The base waits to go down: an adapter that just came up (its queue dispatched) follows
    // the others out; the last one to leave lets the base go.
    if (e.state == ModelState::kActive) {
      if (Status st = take_down(m, "base suspending"); !st.is_ok()) {
        log_warn("fleet: suspending adapter {} failed: {}", e.spec.name, st.message());
      }
    }
    finish_pending_take_down(e.parent);
  }
  // Anything waiting (for this model, or for the room this move freed) goes at the next tick.
  if (timer_ != nullptr) {
    for (const auto& x : models_) {
      if (x->want_up) {
        timer_->wake_at(now);
        break;
      }
    }
  }
}

void FleetController::expire(int64_t now_ns) {
  if (queued_total_ == 0) return;
  for (size_t i = 0; i < models_.size(); ++i) {
    Entry& e = *models_[i];
    if (e.pending.empty()) continue;
    const std::vector<PendingRequest> expired = e.pending.take_expired(now_ns);
    queued_total_ -= static_cast<int64_t>(expired.size());
    for (const PendingRequest& p : expired) {
      note_completion(e, now_ns, false);
      host_->reject(static_cast<ModelIndex>(i), p.id,
                    Status(ErrorCode::kUnavailable,
                           fmt::format("model {} did not become ready within {:.1f} s; retry later",
                                       e.spec.name, options_.request_deadline_ns * 1e-9)));
    }
    if (e.pending.empty() && e.by_request) e.want_up = false;
  }
}

void FleetController::tick() {
  const int64_t now = clock_->now_ns();
  expire(now);
  for (size_t i = 0; i < models_.size(); ++i) {
    Entry& e = *models_[i];
    const auto m = static_cast<ModelIndex>(i);
    if (!e.want_up || e.moving) continue;
    if (e.by_request && e.pending.empty()) {
      e.want_up = false;
      continue;
    }
    if (e.state == ModelState::kActive) {
      e.want_up = false;
      dispatch_queue(m);
      continue;
    }
    const bool by_request = e.by_request;
    Status r = bring_up(m, by_request ? "request" : "operator");
    if (!r.is_ok()) {
      e.want_up = false;
      refuse_queue(m, r.code() == ErrorCode::kResourceExhausted
                          ? Status(ErrorCode::kUnavailable, r.message())
                          : r);
    }
  }
  any_waiting_for_room_ = false;
  for (auto& e : models_) {
    if (!e->want_up) e->by_request = false;
    any_waiting_for_room_ = any_waiting_for_room_ || (e->want_up && e->waiting_for_room);
  }
  apply_idle_policies();
  enforce_host_budget();
}

void FleetController::apply_idle_policies() {
  // One decide() per distinct policy, over the whole view (a policy may weigh the fleet), keeping
  // only its decisions for the models it governs.
  if (policies_.empty()) return;
  std::vector<Decision> decisions;
  {
    const FleetView& v = view();
    for (const IdlePolicy* p : policies_) {
      for (Decision& d : p->decide(v, activity_)) {
        const ModelIndex m = find(d.model);
        if (m >= 0 && policy_of(at(m)) == p) decisions.push_back(std::move(d));
      }
    }
  }
  for (const Decision& d : decisions) {
    const ModelIndex m = find(d.model);
    if (m < 0 || at(m).moving) continue;
    Entry& e = at(m);
    Status r;
    switch (d.action) {
      case Action::kSuspend:
        if (e.state == ModelState::kActive) r = take_down(m, d.reason);
        break;
      case Action::kPrewarm:
        if (budget_of(e).available() >= e.spec.active_bytes) r = bring_up(m, d.reason);
        break;
      case Action::kEvict:
        if (e.state == ModelState::kSuspended) r = push_to_disk(m, d.reason);
        break;
    }
    if (!r.is_ok()) log_warn("fleet: {} {} failed: {}", action_name(d.action), d.model, r.message());
  }
}

int64_t FleetController::host_bytes() const {
  int64_t n = 0;
  for (size_t i = 0; i < models_.size(); ++i) {
    const Entry& e = *models_[i];
    if (e.state == ModelState::kSuspended && !e.moving) {
      n += costs_of(static_cast<ModelIndex>(i)).host_bytes;
    }
  }
  return n;
}

void FleetController::enforce_host_budget() {
  if (options_.host_budget_bytes <= 0) return;
  const int64_t excess = host_bytes() - options_.host_budget_bytes;
  if (excess <= 0) return;
  const EvictionPlan plan = eviction_.choose(view(), activity_, PressureTier::kHost, excess);
  for (const Decision& d : plan.decisions) {
    const ModelIndex m = find(d.model);
    if (m < 0) continue;
    if (Status st = push_to_disk(m, d.reason); !st.is_ok()) {
      log_warn("fleet: evicting {} to meet the host budget failed: {}", d.model, st.message());
    }
  }
}

int64_t FleetController::next_tick_ns() const {
  int64_t next = IdlePolicy::kNever;
  if (queued_total_ > 0) {
    for (const auto& e : models_) {
      // (A wanted bring-up asks for its tick through the Timer when it can go.)
      const int64_t d = e->pending.earliest_deadline_ns();
      if (d >= 0) next = std::min(next, d);
    }
  }
  if (!policies_.empty()) {
    const FleetView& v = view();
    for (const IdlePolicy* p : policies_) {
      const int64_t t = p->next_decision_ns(v, activity_);
      if (t < 0) return -1;
      next = std::min(next, t);
    }
  }
  return next;
}

// Operator moves.
Status FleetController::load(ModelIndex m, std::string_view reason) {
  Entry& e = at(m);
  const ModelState st = e.state;
  if ((st != ModelState::kUnloaded && st != ModelState::kEvicted && st != ModelState::kFailed) ||
      e.moving) {
    return invalid_argument(fmt::format("model {} is {}: only unloaded, evicted or failed models "
                                        "load", e.spec.name, model_state_name(st)));
  }
  e.by_request = false;
  Status r = bring_up(m, reason);
  if (!r.is_ok()) refuse_queue(m, r);
  return r;
}

Status FleetController::resume(ModelIndex m, std::string_view reason) {
  Entry& e = at(m);
  e.by_request = false;
  Status r = bring_up(m, reason);
  if (!r.is_ok()) refuse_queue(m, r);
  return r;
}

Status FleetController::suspend(ModelIndex m, std::string_view reason) {
  if (at(m).moving) {
    return invalid_argument(fmt::format("model {} is moving ({}): suspend it afterwards",
                                        at(m).spec.name, model_state_name(state(m))));
  }
  return take_down(m, reason);
}

Status FleetController::evict(ModelIndex m, std::string_view reason) {
  return push_to_disk(m, reason);
}

}  // namespace tessera::fleet
