#include "tessera/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>

#include "tessera/base/check.h"
#include "tessera/base/clock.h"
#include "tessera/base/rng.h"
#include "tessera/fleet/fleet_controller.h"
#include "tessera/fleet/idle_policy.h"
#include "tessera/fleet/replica_routing.h"
#include "tessera/sim/event_queue.h"
#include "tessera/sim/latency_histogram.h"
#include "tessera/sim/device_arbiter.h"
#include "tessera/sim/iteration_replica.h"
#include "tessera/sim/replica_sim.h"
#include "tessera/sim/sim_host.h"

namespace tessera::sim {

namespace {

using fleet::ModelState;

enum Kind : uint8_t { kArrival, kReplica, kMove, kTick };

enum class Routing { kSpread, kPack };

// A replica's cost stretched by the share of its node's compute that the busy models need
// (pooled: models resident together time-share the accelerators).
class StretchedCost final : public CostModel {
 public:
  explicit StretchedCost(std::shared_ptr<const CostModel> base) : base_(std::move(base)) {}
  // The factor lives with whoever shares the compute (a pooled node, the one shared device):
  // one write stretches every replica on it.
  void share_stretch(const double* s) { stretch_ = s; }
  std::string describe() const override { return base_->describe(); }
  double step_s(const StepWork& w) const override { return base_->step_s(w) * *stretch_; }
  int64_t weight_bytes() const override { return base_->weight_bytes(); }
  int64_t kv_bytes_per_token() const override { return base_->kv_bytes_per_token(); }
  int64_t kv_capacity_tokens() const override { return base_->kv_capacity_tokens(); }
  double load_s() const override { return base_->load_s(); }
  double resume_s() const override { return base_->resume_s(); }
  double suspend_s() const override { return base_->suspend_s(); }
  int32_t accelerators() const override { return base_->accelerators(); }

 private:
  std::shared_ptr<const CostModel> base_;
  static constexpr double kOne = 1.0;
  const double* stretch_ = &kOne;
};

int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

class Sim final : public SimHost::Driver {
 public:
  Sim(Workload& workload, const std::vector<SimModel>& models, const AcceleratorSpec& acc,
      const SimOptions& o)
      : workload_(workload), models_(models), acc_(acc), o_(o), clock_(0), step_rng_(o.step_seed) {}

  Result<SimResult> run();

  // SimHost::Driver.
  void start_move(int32_t slot, fleet::Move move, double seconds) override {
    events_.push(now() + static_cast<int64_t>(std::llround(seconds * 1e9)), kMove, slot,
                 static_cast<int32_t>(move));
  }
  Status dispatch(int32_t slot, engine::RequestId id) override;
  void reject(int32_t slot, engine::RequestId id, const Status& why) override;

 private:
  struct Slot {
    int32_t model = 0;
    int32_t replica = 0;
    int32_t node = 0;
    fleet::ModelIndex local = 0;
    int32_t tp = 1;
    int64_t active_bytes = 0;
    std::unique_ptr<StretchedCost> cost;
    std::unique_ptr<ReplicaSim> replica_sim;  // null when arbitrated
    // arbitrated (shared_device + device_arbitration): stepped one iteration per grant instead.
    std::unique_ptr<IterationReplica> iter;
    IterationReplica::Plan plan;  // arbitrated: the pending one
    int64_t asked_ns = 0, granted_ns = 0;  // arbitrated: of the pending iteration
    int32_t in_flight = 0;  // routed here, not finished
    ModelState state = ModelState::kUnloaded;
    int64_t scheduled_ns = -1;
    bool busy = false;
  };
  struct Node {
    std::unique_ptr<SimHost> host;
    std::unique_ptr<fleet::FleetController> ctl;
    int64_t tick_at = INT64_MAX;
    int32_t accelerators = 0;  // pooled: the group; else 0
    int64_t held_bytes = 0;
    int32_t busy_tp = 0;
    std::unique_ptr<double> stretch = std::make_unique<double>(1.0);  // pooled
    std::vector<int32_t> slots;  // its slots (global indices)
    std::vector<int32_t> busy;   // pooled: its busy slots, unordered
  };
  struct Req {
    int64_t arrive = 0;
    int64_t first = -1;
    int32_t out = 1;
    int32_t in = 1;
    int32_t cached = 0;
    int32_t slot = 0;
    bool live = false;
    int64_t log = -1;  // its entry in result_.request_log (record_requests)
  };
  class NodeTimer final : public fleet::Timer {
   public:
    NodeTimer(Sim* sim, int32_t node) : sim_(sim), node_(node) {}
    void wake_at(int64_t at_ns) override { sim_->schedule_tick(node_, at_ns); }

   private:
    Sim* sim_;
    int32_t node_;
  };

  int64_t now() const { return clock_.now_ns(); }
  Status build();
  void schedule_tick(int32_t node, int64_t at_ns);
  void reschedule_replica(int32_t slot);
  int32_t route(int32_t model);
  void on_arrival(const SimRequest& r);
  void on_replica(int32_t slot);
  void on_transition(int32_t node, const fleet::TransitionEvent& ev);
  void set_in_use(int64_t t, int64_t accelerators_delta, int64_t bytes_delta);
  void after_idle(int32_t slot);
  void plan_tick(int32_t node);
  void update_stretch(int32_t node);
  bool arbitrated() const { return o_.shared_device && o_.device_arbitration; }
  // arbitrated: slot plans its next iteration and asks the device for it (nothing when it holds
  // or waits already, or has nothing to run).
  void device_ask(int32_t slot);
  void start_iteration(int32_t slot);
  bool replica_idle(const Slot& s) const { return s.iter ? s.iter->idle() : s.replica_sim->idle(); }

  Workload& workload_;
  const std::vector<SimModel>& models_;
  AcceleratorSpec acc_;
  SimOptions o_;
  FakeClock clock_;
  EventQueue events_;
  std::vector<Slot> slots_;
  std::vector<std::vector<int32_t>> model_slots_;
  std::vector<Node> nodes_;
  std::vector<std::unique_ptr<NodeTimer>> timers_;
  std::shared_ptr<const fleet::IdlePolicy> policy_;
  Routing routing_ = Routing::kSpread;
  std::vector<fleet::ReplicaSlotView> route_views_;  // route()'s scratch
  std::vector<size_t> rr_cursor_;                    // per model: round-robin position
  std::vector<fleet::SloWindow> slo_windows_;        // per model: recent TTFT SLO outcomes
  bool pooled_ = false;
  bool dedicated_ = false;
  int32_t busy_slots_ = 0;
  std::vector<int32_t> busy_list_;  // shared_device: the busy slots, unordered
  // Marks slot i busy or not in its node's (pooled) or the device's (shared_device) busy list.
  void set_busy(int32_t i, bool busy);
  int64_t device_busy_since_ = 0;  // shared_device: when busy_slots_ last left 0
  double device_stretch_ = 1.0;  // shared_device
  std::unique_ptr<DeviceArbiter> arbiter_;  // arbitrated
  Rng step_rng_;  // arbitrated: draws of step_multipliers
  int32_t last_device_slot_ = -1;  // arbitrated: the slot that ran the device's last iteration
  size_t series_at_ = 0;    // step_block: the cursor into step_series
  int32_t block_left_ = 0;  // step_block: iterations before the cursor jumps
  // Requests in flight, in a slab: a request's id is its index + 1 (ids are reused once it ends).
  std::vector<Req> reqs_;
  std::vector<engine::RequestId> free_ids_;
  int64_t live_ = 0;
  Req* find_req(engine::RequestId id) {
    if (id == 0 || id > reqs_.size() || !reqs_[id - 1].live) return nullptr;
    return &reqs_[id - 1];
  }
  engine::RequestId new_req(const Req& r) {
    engine::RequestId id;
    if (!free_ids_.empty()) {
      id = free_ids_.back();
      free_ids_.pop_back();
      reqs_[id - 1] = r;
    } else {
      reqs_.push_back(r);
      id = reqs_.size();
    }
    reqs_[id - 1].live = true;
    ++live_;
    return id;
  }
  void end_req(engine::RequestId id) {
    reqs_[id - 1].live = false;
    free_ids_.push_back(id);
    --live_;
  }
  int64_t duration_ns_ = 0;
  LatencyHistogram ttft_, tpot_;
  SimResult result_;
  // Accelerators (and active bytes) in use now, integrated over [0, duration).
  int64_t in_use_ = 0;
  int64_t held_bytes_ = 0;
  int64_t acct_ns_ = 0;
  double acc_seconds_ = 0.0;
  double byte_seconds_ = 0.0;
  std::vector<double> sample_acc_seconds_;
};

Status Sim::build() {
  // The idle policies come from the one factory the live server uses (fleet/idle_policy.h).
  auto make = [&](const char* kind) -> Status {
    TS_ASSIGN_OR_RETURN(policy_, fleet::make_idle_policy(fleet::IdlePolicySettings{kind, o_.keep_alive_s}));
    return Status();
  };
  if (o_.policy == "dedicated") {
    dedicated_ = true;
  } else if (o_.policy == "keep-alive") {
    TS_RETURN_IF_ERROR(make("fixed"));
  } else if (o_.policy == "adaptive") {
    TS_RETURN_IF_ERROR(make("adaptive"));
  } else if (o_.policy == "scaling" || o_.policy == "pooled") {
    TS_RETURN_IF_ERROR(make("fixed"));
    routing_ = Routing::kPack;
    pooled_ = o_.policy == "pooled";
  } else {
    return invalid_argument(fmt::format(
        "unknown policy '{}': expected dedicated, keep-alive, adaptive, scaling or pooled", o_.policy));
  }
  if (models_.size() != workload_.models().size()) {
    return invalid_argument(fmt::format("{} simulated models for a workload of {}", models_.size(),
                                        workload_.models().size()));
  }
  model_slots_.resize(models_.size());
  rr_cursor_.assign(models_.size(), 0);
  slo_windows_.assign(models_.size(), fleet::SloWindow(o_.slo_window));
  for (size_t m = 0; m < models_.size(); ++m) {
    const Deployment& d = models_[m].deployment;
    if (d.replicas < 1 || !d.config.cost) {
      return invalid_argument("model " + models_[m].name + " has no replicas or no cost model");
    }
    for (int32_t r = 0; r < d.replicas; ++r) {
      Slot s;
      s.model = static_cast<int32_t>(m);
      s.replica = r;
      s.tp = d.config.tp;
      s.cost = std::make_unique<StretchedCost>(d.config.cost);
      s.active_bytes = d.config.cost->weight_bytes() +
                       d.config.cost->kv_capacity_tokens() * d.config.cost->kv_bytes_per_token();
      if (arbitrated()) {
        s.iter = std::make_unique<IterationReplica>(*s.cost, d.config.limits(), o_.slo.ttft_ns,
                                                    o_.device_tpot_deadline_ns);
      } else {
        s.replica_sim = std::make_unique<ReplicaSim>(*s.cost, d.config.limits());
      }
      model_slots_[m].push_back(static_cast<int32_t>(slots_.size()));
      slots_.push_back(std::move(s));
    }
  }
  if (arbitrated()) arbiter_ = std::make_unique<DeviceArbiter>(static_cast<int32_t>(slots_.size()));
  // Nodes: one per model (own accelerators), or pooled groups filled first-fit by active bytes.
  std::vector<std::vector<int32_t>> node_slots;
  if (!pooled_) {
    for (const auto& ms : model_slots_) node_slots.push_back(ms);
  } else {
    const double group_bytes = acc_.memory_bytes * o_.pool_accelerators;
    std::vector<int32_t> order(slots_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return slots_[a].active_bytes > slots_[b].active_bytes;
    });
    std::vector<double> host_used, active_used, resident_used;
    for (int32_t s : order) {
      if (static_cast<double>(slots_[s].active_bytes) > group_bytes || slots_[s].tp > o_.pool_accelerators) {
        return invalid_argument(fmt::format("a replica of {} ({} accelerators, {:.1f} GB) does not fit "
                                            "a pool node of {} {}",
                                            models_[slots_[s].model].name, slots_[s].tp,
                                            slots_[s].active_bytes * 1e-9, o_.pool_accelerators,
                                            acc_.name));
      }
      const double w = static_cast<double>(slots_[s].cost->weight_bytes());
      const auto act = static_cast<double>(slots_[s].active_bytes);
      const SimModel& model = models_[static_cast<size_t>(slots_[s].model)];
      const double rate = model.mean_rps / model.deployment.replicas;
      const double resident = act * (1.0 - std::exp(-rate * o_.keep_alive_s));
      size_t n = 0;
      for (; n < node_slots.size(); ++n) {
        if (static_cast<int32_t>(node_slots[n].size()) < o_.pool_max_models &&
            host_used[n] + w <= o_.host_memory_bytes &&
            active_used[n] + act <= o_.pool_overcommit * group_bytes &&
            resident_used[n] + resident <= o_.pool_fill * group_bytes) {
          break;
        }
      }
      if (n == node_slots.size()) {
        node_slots.emplace_back();
        host_used.push_back(0.0);
        active_used.push_back(0.0);
        resident_used.push_back(0.0);
      }
      node_slots[n].push_back(s);
      host_used[n] += w;
      active_used[n] += act;
      resident_used[n] += resident;
    }
  }
  nodes_.resize(node_slots.size());
  for (size_t n = 0; n < node_slots.size(); ++n) {
    Node& node = nodes_[n];
    node.host = std::make_unique<SimHost>(this);
    timers_.push_back(std::make_unique<NodeTimer>(this, static_cast<int32_t>(n)));
    std::vector<fleet::ControlledModel> cms;
    for (int32_t s : node_slots[n]) {
      Slot& slot = slots_[static_cast<size_t>(s)];
      slot.node = static_cast<int32_t>(n);
      node.slots.push_back(s);
      slot.local = node.host->add(SimHost::Slot{s, slot.cost.get()});
      if (o_.shared_device) {
        slot.cost->share_stretch(&device_stretch_);
      } else if (pooled_) {
        slot.cost->share_stretch(node.stretch.get());
      }
      fleet::ControlledModel cm;
      cm.name = fmt::format("{}#{}", models_[slot.model].name, slot.replica);
      cm.active_bytes = slot.active_bytes;
      cm.weight_bytes = slot.cost->weight_bytes();
      cm.ttft_slo_ns = o_.slo.ttft_ns;
      cms.push_back(std::move(cm));
    }
    fleet::ControllerOptions co;
    co.idle_policy = policy_;
    co.histogram = o_.histogram;
    co.request_deadline_ns = o_.request_deadline_ns;
    if (pooled_) {
      node.accelerators = o_.pool_accelerators;
      co.active_budget_bytes = static_cast<int64_t>(acc_.memory_bytes * o_.pool_accelerators);
    }
    TS_ASSIGN_OR_RETURN(node.ctl, fleet::FleetController::create(std::move(cms), co, node.host.get(),
                                                                 &clock_, timers_.back().get()));
    const auto idx = static_cast<int32_t>(n);
    node.ctl->add_listener([this, idx](const fleet::TransitionEvent& ev) { on_transition(idx, ev); });
  }
  return Status();
}

void Sim::set_in_use(int64_t t, int64_t accelerators_delta, int64_t bytes_delta) {
  // Integrates the current level over [acct_ns_, t) clipped to [0, duration), then changes it.
  const int64_t from = std::clamp<int64_t>(acct_ns_, 0, duration_ns_);
  const int64_t to = std::clamp<int64_t>(t, 0, duration_ns_);
  if (to > from) {
    const double dt = static_cast<double>(to - from) * 1e-9;
    acc_seconds_ += static_cast<double>(in_use_) * dt;
    byte_seconds_ += static_cast<double>(held_bytes_) * dt;
    // Per sample period.
    const auto period = static_cast<int64_t>(o_.sample_period_s * 1e9);
    int64_t a = from;
    while (a < to) {
      const int64_t bucket = a / period;
      const int64_t end = std::min(to, (bucket + 1) * period);
      if (static_cast<size_t>(bucket) >= sample_acc_seconds_.size()) {
        sample_acc_seconds_.resize(static_cast<size_t>(bucket) + 1, 0.0);
      }
      sample_acc_seconds_[static_cast<size_t>(bucket)] +=
          static_cast<double>(in_use_) * static_cast<double>(end - a) * 1e-9;
      a = end;
    }
  }
  acct_ns_ = std::max(acct_ns_, t);
  in_use_ += accelerators_delta;
  held_bytes_ += bytes_delta;
}

void Sim::on_transition(int32_t n, const fleet::TransitionEvent& ev) {
  Node& node = nodes_[static_cast<size_t>(n)];
  const fleet::ModelIndex local = node.ctl->find(ev.model);
  Slot& s = slots_[static_cast<size_t>(node.host->slot(local).global)];
  s.state = ev.to;
  switch (ev.to) {
    case ModelState::kLoading: ++result_.loads; break;
    case ModelState::kResuming: ++result_.resumes; break;
    case ModelState::kSuspending: ++result_.suspends; break;
    case ModelState::kEvicted: ++result_.evictions; break;
    default: break;
  }
  const bool was = fleet::holds_active_memory(ev.from);
  const bool is = fleet::holds_active_memory(ev.to);
  if (was != is) {
    const int64_t sign = is ? 1 : -1;
    if (!pooled_) {
      set_in_use(ev.at_ns, sign * s.tp, sign * s.active_bytes);
    } else {
      const auto acc_bytes = static_cast<int64_t>(acc_.memory_bytes);
      auto used = [&](int64_t bytes) {
        return std::min<int64_t>(node.accelerators, (bytes + acc_bytes - 1) / acc_bytes);
      };
      const int64_t before = used(node.held_bytes);
      node.held_bytes += sign * s.active_bytes;
      set_in_use(ev.at_ns, used(node.held_bytes) - before, sign * s.active_bytes);
    }
  }
  if (o_.record_transitions ||
      static_cast<int64_t>(result_.transitions.size()) < o_.max_trace_events) {
    result_.transitions.push_back(SimTransition{ev.at_ns * 1e-9, ev.model,
                                                std::string(fleet::model_state_name(ev.from)),
                                                std::string(fleet::model_state_name(ev.to)),
                                                ev.reason});
  }
}

void Sim::schedule_tick(int32_t n, int64_t at_ns) {
  Node& node = nodes_[static_cast<size_t>(n)];
  at_ns = std::max(at_ns, now());
  if (at_ns >= node.tick_at) return;
  node.tick_at = at_ns;
  events_.push(at_ns, kTick, n);
}

void Sim::reschedule_replica(int32_t slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  const int64_t t = s.replica_sim->next_event_ns();
  if (t == ReplicaSim::kNever || t == s.scheduled_ns) return;
  s.scheduled_ns = t;
  events_.push(t, kReplica, slot);
}

void Sim::update_stretch(int32_t n) {
  if (arbitrated()) return;  // whole iterations at full speed, one replica at a time
  double* stretch = nullptr;
  double value = 1.0;
  if (o_.shared_device) {
    // One device time-shared by engine::DeviceScheduler, which grants iterations by least
    // device time used: with k replicas busy each gets 1/k of the device, so its steps take k
    // times as long.
    stretch = &device_stretch_;
    value = std::max(1, busy_slots_);
  } else if (pooled_) {
    Node& node = nodes_[static_cast<size_t>(n)];
    stretch = node.stretch.get();
    value = std::max(1.0, static_cast<double>(node.busy_tp) / node.accelerators);
  } else {
    return;
  }
  if (*stretch == value) return;
  *stretch = value;
  // The busy replicas sharing it take the new pace from their next iteration on.
  for (int32_t i : o_.shared_device ? busy_list_ : nodes_[static_cast<size_t>(n)].busy) {
    slots_[static_cast<size_t>(i)].replica_sim->reprice(now());
    reschedule_replica(i);
  }
}

void Sim::set_busy(int32_t i, bool busy) {
  Slot& s = slots_[static_cast<size_t>(i)];
  s.busy = busy;
  std::vector<int32_t>& list = o_.shared_device ? busy_list_ : nodes_[static_cast<size_t>(s.node)].busy;
  if (!o_.shared_device && !pooled_) return;  // nothing shares its compute
  if (busy) {
    list.push_back(i);
  } else {
    auto it = std::find(list.begin(), list.end(), i);
    TS_CHECK(it != list.end());
    *it = list.back();
    list.pop_back();
  }
}

Status Sim::dispatch(int32_t slot, engine::RequestId id) {
  const Req* q = find_req(id);
  TS_CHECK(q != nullptr);
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!s.busy) {
    set_busy(slot, true);
    nodes_[static_cast<size_t>(s.node)].busy_tp += s.tp;
    if (busy_slots_++ == 0) device_busy_since_ = now();
    update_stretch(s.node);
  }
  if (s.iter) {
    s.iter->add(id, now(), q->in, q->out, q->cached);
    device_ask(slot);
    return Status();
  }
  s.replica_sim->add(id, now(), q->in, q->out, q->cached);
  reschedule_replica(slot);
  return Status();
}

void Sim::device_ask(int32_t slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (arbiter_->holder() == slot || arbiter_->waiting(slot) || !s.iter->has_work()) return;
  s.plan = s.iter->plan();
  s.asked_ns = now();
  if (arbiter_->acquire(slot, s.plan.deadline_ns, now())) start_iteration(slot);
}

void Sim::start_iteration(int32_t slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.granted_ns = now();
  const bool prompt = s.plan.prefill_tokens > 0;
  const bool handoff = last_device_slot_ >= 0 && last_device_slot_ != slot;
  last_device_slot_ = slot;
  int64_t length = s.plan.duration_ns + (handoff ? o_.device_switch_ns : 0);
  if (!o_.device_speed.empty()) {
    auto it = std::upper_bound(
        o_.device_speed.begin(), o_.device_speed.end(), now(),
        [](int64_t t, const std::pair<int64_t, double>& e) { return t < e.first; });
    if (it != o_.device_speed.begin()) {
      length = std::max<int64_t>(
          1, std::llround(static_cast<double>(length) * std::prev(it)->second));
    }
  }
  if (o_.step_block > 0 && !o_.step_series.empty()) {
    const size_t n = o_.step_series.size();
    if (block_left_ == 0) {
      series_at_ = static_cast<size_t>(step_rng_.next_u64() % n);
      block_left_ = o_.step_block;
    }
    --block_left_;
    for (size_t k = 0; k < n; ++k, series_at_ = (series_at_ + 1) % n) {
      if (o_.step_series[series_at_].second != prompt) continue;
      length = std::max<int64_t>(
          1, std::llround(static_cast<double>(length) * o_.step_series[series_at_].first));
      series_at_ = (series_at_ + 1) % n;
      break;
    }
  } else if (const std::vector<double>& pool =
                 o_.step_multipliers[prompt ? 1 : 0][handoff ? 1 : 0];
             !pool.empty()) {
    const double m = pool[step_rng_.next_u64() % pool.size()];
    length = std::max<int64_t>(1, std::llround(static_cast<double>(length) * m));
  }
  s.scheduled_ns = now() + length;
  events_.push(s.scheduled_ns, kReplica, slot);
}

void Sim::reject(int32_t slot, engine::RequestId id, const Status& /*why*/) {
  const Req* q = find_req(id);
  if (q == nullptr) return;
  ++result_.refused;
  ttft_.add(static_cast<double>(now() - q->arrive) * 1e-9);
  end_req(id);
  Slot& s = slots_[static_cast<size_t>(slot)];
  --s.in_flight;
  if (s.in_flight == 0) after_idle(slot);
}

int32_t Sim::route(int32_t model) {
  const auto& ss = model_slots_[static_cast<size_t>(model)];
  // A replica takes requests up to what it serves within the SLO; past that another comes up.
  const ServingConfig& config = models_[static_cast<size_t>(model)].deployment.config;
  const auto cap = static_cast<int32_t>(std::clamp<double>(std::ceil(config.target_in_flight), 1.0,
                                                           config.max_running));
  route_views_.clear();
  for (int32_t i : ss) {
    const Slot& s = slots_[static_cast<size_t>(i)];
    route_views_.push_back(fleet::ReplicaSlotView{s.state, s.in_flight, 0});
  }
  // The rules the cluster router runs (fleet/replica_routing.h): the cap halved while the model
  // misses its TTFT SLO, round-robin when asked, else choose_replica's.
  const bool missing = slo_windows_[static_cast<size_t>(model)].missing(now());
  const fleet::RoutingRule rule{
      fleet::slo_replica_cap(cap, missing), o_.round_robin,
      routing_ == Routing::kSpread ? fleet::ReplicaSpread::kSpread : fleet::ReplicaSpread::kPack};
  const int32_t k = fleet::route_replica(route_views_, rule, &rr_cursor_[static_cast<size_t>(model)]);
  return ss[static_cast<size_t>(k)];
}

void Sim::on_arrival(const SimRequest& r) {
  ++result_.requests;
  const int32_t slot = route(r.model);
  Slot& s = slots_[static_cast<size_t>(slot)];
  const engine::RequestId id = new_req(Req{now(), -1, std::max(1, r.output_tokens),
                                            std::max(1, r.input_tokens),
                                            std::max(0, r.prefix_tokens), slot, false});
  ++s.in_flight;
  Node& node = nodes_[static_cast<size_t>(s.node)];
  if (o_.record_requests) {
    // Cold as the controller counts it (its model not Active when the request comes), as the
    // live replay flags its requests.
    reqs_[id - 1].log = static_cast<int64_t>(result_.request_log.size());
    result_.request_log.push_back(SimRequestRecord{
        r.model, static_cast<double>(now()) * 1e-9, -1.0,
        node.ctl->state(s.local) != ModelState::kActive});
  }
  Status why;
  if (node.ctl->submit(s.local, id, &why) == fleet::Admission::kRefused) {
    // The controller counted it; the request is gone.
    if (find_req(id) != nullptr) {
      ++result_.refused;
      end_req(id);
    }
    --s.in_flight;
  }
}

void Sim::after_idle(int32_t slot) {
  // The slot went idle: its idle policy's clock starts.
  plan_tick(slots_[static_cast<size_t>(slot)].node);
}

void Sim::plan_tick(int32_t n) {
  // The next tick the node's controller needs with no new event (a policy's next decision or a
  // queued request's deadline); a policy that cannot tell is ticked periodically.
  const int64_t t = nodes_[static_cast<size_t>(n)].ctl->next_tick_ns();
  if (t < 0) {
    schedule_tick(n, now() + static_cast<int64_t>(o_.tick_fallback_s * 1e9));
  } else if (t != fleet::IdlePolicy::kNever) {
    schedule_tick(n, std::max(t, now() + 1));
  }
}

void Sim::on_replica(int32_t slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.scheduled_ns = -1;
  std::vector<ReplicaEvent> out;
  if (s.iter) {
    s.iter->finish(now(), out, now() - s.granted_ns);
    if (o_.record_iterations) {
      result_.iteration_log.push_back(SimIterationRecord{
          s.model, static_cast<double>(s.asked_ns) * 1e-9, static_cast<double>(s.granted_ns) * 1e-9,
          static_cast<double>(now()) * 1e-9, s.plan.prefill_tokens, s.plan.decode_rows});
    }
    const int32_t next = arbiter_->release(slot, now());
    if (next >= 0) start_iteration(next);
  } else {
    s.replica_sim->advance(now(), out);
  }
  Node& node = nodes_[static_cast<size_t>(s.node)];
  for (const ReplicaEvent& e : out) {
    Req* qp = find_req(e.id);
    if (qp == nullptr) continue;
    Req& q = *qp;
    if (e.kind == ReplicaEvent::kFirstToken) {
      q.first = e.t_ns;
      continue;
    }
    const int64_t first = q.first >= 0 ? q.first : e.t_ns;
    const double ttft = static_cast<double>(first - q.arrive) * 1e-9;
    ttft_.add(ttft);
    if (q.log >= 0) result_.request_log[static_cast<size_t>(q.log)].ttft_s = ttft;
    if (q.out > 1) tpot_.add(static_cast<double>(e.t_ns - first) * 1e-9 / (q.out - 1));
    const bool met = first - q.arrive <= o_.slo.ttft_ns;
    slo_windows_[static_cast<size_t>(s.model)].record(e.t_ns, met);
    ++result_.served;
    if (met) ++result_.slo_met;
    node.ctl->finished(s.local, e.id, met, e.t_ns);
    end_req(e.id);
    --s.in_flight;
  }
  if (replica_idle(s) && s.busy) {
    set_busy(slot, false);
    node.busy_tp -= s.tp;
    if (--busy_slots_ == 0) result_.device_busy_s += static_cast<double>(now() - device_busy_since_) * 1e-9;
    update_stretch(s.node);
  }
  if (s.in_flight == 0) after_idle(slot);
  if (s.iter) {
    device_ask(slot);
  } else {
    reschedule_replica(slot);
  }
}

Result<SimResult> Sim::run() {
  const auto wall0 = std::chrono::steady_clock::now();
  TS_RETURN_IF_ERROR(build());
  duration_ns_ = static_cast<int64_t>(workload_.duration_s() * 1e9);
  // Warm start: the first replicas' loads begin early enough to be done at 0 (the longest load),
  // so traffic meets them Active as a freshly started server's would.
  double warmup_s = o_.warmup_s;
  if (warmup_s < 0) {
    warmup_s = 0.0;
    for (const Slot& s : slots_) warmup_s = std::max(warmup_s, s.cost->load_s());
  }
  const auto warmup = static_cast<int64_t>(std::ceil(warmup_s * 1e9));
  clock_.set_ns(-warmup);
  acct_ns_ = -warmup;
  // First replicas (dedicated: all of them) load before traffic starts.
  for (size_t m = 0; m < model_slots_.size(); ++m) {
    for (int32_t i : model_slots_[m]) {
      const Slot& s = slots_[static_cast<size_t>(i)];
      if (!dedicated_ && s.replica > 0) break;
      (void)nodes_[static_cast<size_t>(s.node)].ctl->load(s.local, "start");
    }
  }
  SimRequest next;
  bool have = workload_.next(next);
  if (have) events_.push(next.t_ns, kArrival, 0);
  const int64_t end = duration_ns_ + static_cast<int64_t>(o_.tail_s * 1e9);
  int64_t n_events = 0;
  while (!events_.empty()) {
    const SimEvent e = events_.pop();
    if (e.t_ns > end) break;
    clock_.set_ns(std::max(now(), e.t_ns));
    ++n_events;
    switch (e.kind) {
      case kArrival:
        on_arrival(next);
        have = workload_.next(next);
        if (have) events_.push(std::max(next.t_ns, now()), kArrival, 0);
        break;
      case kReplica:
        if (slots_[static_cast<size_t>(e.a)].scheduled_ns == e.t_ns) on_replica(e.a);
        break;
      case kMove: {
        const Slot& s = slots_[static_cast<size_t>(e.a)];
        nodes_[static_cast<size_t>(s.node)].ctl->move_done(s.local, Status());
        plan_tick(s.node);
        break;
      }
      case kTick: {
        Node& node = nodes_[static_cast<size_t>(e.a)];
        if (node.tick_at != e.t_ns) break;
        node.tick_at = INT64_MAX;
        node.ctl->tick();
        plan_tick(e.a);
        break;
      }
      default: break;
    }
  }
  // Requests still in flight at the end count as missing the SLO.
  result_.refused += live_;
  set_in_use(std::max(now(), duration_ns_), 0, 0);
  result_.policy = o_.policy;
  result_.duration_s = static_cast<double>(duration_ns_) * 1e-9;
  result_.models = static_cast<int64_t>(models_.size());
  result_.slots = static_cast<int64_t>(slots_.size());
  for (const SimModel& m : models_) result_.dedicated_accelerators += m.deployment.accelerators();
  result_.dedicated_accelerator_hours =
      static_cast<double>(result_.dedicated_accelerators) * result_.duration_s / 3600.0;
  result_.accelerator_hours = acc_seconds_ / 3600.0;
  result_.memory_gb_hours = byte_seconds_ * 1e-9 / 3600.0;
  double busy = 0.0;
  for (const Slot& s : slots_) busy += (s.iter ? s.iter->busy_s() : s.replica_sim->busy_s()) * s.tp;
  result_.busy_accelerator_hours = busy / 3600.0;
  for (const Node& n : nodes_) {
    for (int32_t m = 0; m < n.ctl->size(); ++m) result_.cold_starts += n.ctl->status(m).cold_starts;
  }
  result_.ttft_p50_s = ttft_.quantile(0.50);
  result_.ttft_p99_s = ttft_.quantile(0.99);
  result_.ttft_mean_s = ttft_.mean();
  result_.tpot_p50_s = tpot_.quantile(0.50);
  result_.tpot_p99_s = tpot_.quantile(0.99);
  for (double a : sample_acc_seconds_) result_.accelerators_in_use.push_back(a / o_.sample_period_s);
  result_.events = n_events;
  result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  result_.peak_rss_bytes = peak_rss_bytes();
  return std::move(result_);
}

}  // namespace

Result<SimResult> run_simulation(Workload& workload, const std::vector<SimModel>& models,
                                 const AcceleratorSpec& accelerator, const SimOptions& options) {
  Sim sim(workload, models, accelerator, options);
  return sim.run();
}

}  // namespace tessera::sim
