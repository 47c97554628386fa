// FleetController: the fleet's decisions and bookkeeping, the same object in the live server
// (fleet_manager.h over live_model_host.h), the simulator (sim/) and the cluster controller. It
// owns, per model, the lifecycle (model_state.h), the queue of requests waiting for the model to
// come up (pending_requests.h), the active-memory reservation, usage accounting and the
// failure back-off; it applies the pure policies (IdlePolicy, ColdStartCostEviction) on tick().
// It does no I/O and has no threads or locks: a ModelHost carries out moves and dispatches, the
// injected Clock gives time and the Timer asks for the next tick.
//
//   submit(m, id)     Active: dispatch now. Failed and backing off: refuse at once, naming the
//                     cause. Otherwise queue (deadline) and want the model up at the next tick.
//   tick()            expire queued requests; bring up wanted models (making room by suspending
//                     idle ones, cheapest expected cold start per byte first); apply each idle
//                     policy; evict suspended models while the host tier is over budget.
//   move_done(m, st)  finishes a move: Active (dispatch the queue), Suspended, Evicted or Failed
//                     (its queue refused with the cause; retried after a back-off that doubles).
//
// Adapters. An entry with a parent (ControlledModel::parent) is a LoRA adapter of that base
// model, with the same lifecycle, budgets and policies as a model; its tiers are the adapter's:
// Active = registered in the base's engine (its bytes in the active budget), Suspended = the
// loaded adapter kept in host memory (its host_bytes in the host budget), Evicted/Unloaded = only
// its file. Rules, all enforced here:
//   - an adapter is never Active while its base is not: bringing an adapter up brings the base up
//     first (the adapter waits, wanted, until the base is Active), and a request for it queues
//     until both are;
//   - taking a base down (policy, pressure or operator) first suspends its Active adapters; the
//     base itself goes Suspending only when none of them holds active memory any more (until
//     then it keeps serving and counts as freeing its bytes);
//   - an adapter's Suspending drains its in-flight requests in the host (none is lost); requests
//     arriving meanwhile queue and bring it back afterwards;
//   - an adapter's traffic also counts as its base's activity (a base whose adapters serve is
//     not idle), while requests, finishes and SLO counts stay the adapter's own;
//   - a base that fails to come up refuses the queues of the adapters waiting for it.
//
// Thread-safety: none; the owner serializes every call (the live fleet under one mutex, the
// simulator on its one thread). Calls into the host happen inside these calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/engine/request.h"
#include "tessera/fleet/activity_tracker.h"
#include "tessera/fleet/eviction_policy.h"
#include "tessera/fleet/fleet_view.h"
#include "tessera/fleet/idle_policy.h"
#include "tessera/fleet/lifecycle.h"
#include "tessera/fleet/memory_budget.h"
#include "tessera/fleet/model_host.h"
#include "tessera/fleet/pending_requests.h"

namespace tessera::fleet {

// One model as the controller sees it.
struct ControlledModel {
  std::string name;
  int64_t active_bytes = 0;  // weights + KV pool: reserved in the active budget while held
  // -1: the model runs on the CPU and its active bytes count against the active budget; N: it
  // runs on device N, where its weights and KV pool live, and they count against that device's
  // budget (ControllerOptions::device_budget_bytes) instead: device memory is the top tier.
  int device = -1;
  int64_t weight_bytes = 0;
  bool pinned = false;       // never suspended or evicted by a policy
  std::shared_ptr<const IdlePolicy> idle_policy;  // null: the controller's default
  int64_t ttft_slo_ns = 1'000'000'000;            // for SLO accounting
  std::string failed;  // non-empty: starts Failed with this error (e.g. its file did not open)
  // Non-empty: this entry is a LoRA adapter of the model so named (a base: not itself an
  // adapter); see "Adapters" above.
  std::string parent;
};

struct ControllerOptions {
  int64_t active_budget_bytes = 0;  // 0: unlimited
  int64_t host_budget_bytes = 0;    // suspended models' host bytes; 0: unlimited
  // Per device: active bytes of the brought-up models on it (`--device-mem-budget`); room is
  // made by suspending idle models on the same device, with the same eviction policy. 0:
  // unlimited.
  int64_t device_budget_bytes = 0;
  std::shared_ptr<const IdlePolicy> idle_policy;  // default policy; null: none
  EvictionOptions eviction;
  HistogramOptions histogram;
  int64_t request_deadline_ns = 30'000'000'000;  // how long a queued request waits for Active
  // A model that failed to come up is retried when a request or the operator asks, but no
  // sooner than this after its n-th consecutive failure: base x 2^(n-1), at most max.
  int64_t retry_backoff_ns = 5'000'000'000;
  int64_t max_retry_backoff_ns = 300'000'000'000;
};

// What the controller knows of one model (see fleet_manager.h's ModelStatus for the meanings).
struct ControlledStatus {
  ModelState state = ModelState::kUnloaded;
  int64_t state_since_ns = 0;
  bool moving = false;              // a move is in flight
  int64_t queued = 0;
  int64_t resumes = 0, loads = 0;
  double last_bring_up_s = 0.0;
  // Completed resumes and suspensions and the time they took, summed (means for comparisons).
  int64_t resumes_done = 0, suspends_done = 0;
  double resume_seconds = 0.0, suspend_seconds = 0.0;
  std::string last_error;
  int64_t retry_at_ns = 0;          // Failed: requests are refused until then
  double memory_seconds = 0.0, idle_memory_seconds = 0.0;
  int64_t cold_starts = 0, in_flight = 0, finished = 0, slo_met = 0;
};

// Outcome of submit().
enum class Admission : uint8_t {
  kDispatched,  // handed to the host
  kQueued,      // waiting for the model to come up
  kRefused,     // not accepted (the returned Status says why); the host's request is dropped
};

class FleetController {
 public:
  // `host`, `clock` and `timer` are not owned and must outlive the controller; `timer` may be
  // null (the owner ticks on its own schedule). Models start Unloaded (or Failed, see
  // ControlledModel::failed). Errors: kInvalidArgument for no models, empty or duplicate names,
  // a negative budget, an adapter whose parent is unknown or is itself an adapter.
  static Result<std::unique_ptr<FleetController>> create(std::vector<ControlledModel> models,
                                                         ControllerOptions options,
                                                         ModelHost* host, const Clock* clock,
                                                         Timer* timer = nullptr);

  ~FleetController();
  FleetController(const FleetController&) = delete;
  FleetController& operator=(const FleetController&) = delete;

  int32_t size() const { return static_cast<int32_t>(models_.size()); }
  // -1 when unknown.
  ModelIndex find(std::string_view name) const;
  const ControlledModel& model(ModelIndex m) const;
  // The base of adapter `m`; -1 when `m` is a base model.
  ModelIndex parent(ModelIndex m) const;
  // The adapters of base `m`, in the controller's order (empty for an adapter).
  const std::vector<ModelIndex>& adapters(ModelIndex m) const;
  // The idle policy that governs `m`: its own, else the controller's default; null: none.
  // Whether the view the policies see (kept current incrementally) equals one rebuilt from every
  // model's state now (for tests).
  bool view_is_current() const;
  const IdlePolicy* idle_policy(ModelIndex m) const { return policy_of(at(m)); }
  ModelState state(ModelIndex m) const;
  ControlledStatus status(ModelIndex m) const;  // memory-seconds integrated up to now
  // Adds a listener to every model's lifecycle; call before the first move.
  void add_listener(TransitionListener listener);

  // Requests. `id` is the owner's, unique across the fleet. kRefused leaves `why` set.
  Admission submit(ModelIndex m, engine::RequestId id, Status* why = nullptr);
  // A dispatched request finished (any outcome) at `at_ns` (-1: now). `slo_met`: its first token
  // came within the SLO.
  void finished(ModelIndex m, engine::RequestId id, bool slo_met, int64_t at_ns = -1);
  // Refuses every queued request with `why` (the owner is stopping).
  void refuse_all_queued(const Status& why);
  // The model's footprint became known (a file that opened only on a later load). Adjusts its
  // reservation when it holds one. Errors: kResourceExhausted when the new size does not fit.
  Status resize(ModelIndex m, int64_t active_bytes, int64_t weight_bytes);
  // Cancels a queued request (the host's reject() gets kCancelled). False when `id` is not
  // queued (it may be running: the owner cancels it in the host).
  bool cancel(ModelIndex m, engine::RequestId id);

  // Operator moves. Errors: kFailedPrecondition-like kInvalidArgument when the model is not in a
  // state the move starts from or is moving; kResourceExhausted when bringing it up cannot fit
  // even after suspending idle models. OK means the move began (it may complete later; a
  // bring-up short of room waits for the suspensions it started).
  Status load(ModelIndex m, std::string_view reason = "operator");
  Status resume(ModelIndex m, std::string_view reason = "operator");
  Status suspend(ModelIndex m, std::string_view reason = "operator");
  Status evict(ModelIndex m, std::string_view reason = "operator");

  // The host finished a move of `m`. On error the model is Failed (bring-ups and suspends) or
  // stays Suspended (evictions).
  void move_done(ModelIndex m, const Status& result);

  // One control pass at clock->now_ns().
  void tick();
  // Forgets what every model's activity learned so far (ActivityTracker::forget at now): for a
  // benchmark whose warm-up requests must not teach the idle policies.
  void forget_activity();
  // When the next tick is due without new events: the earliest queued request's deadline or
  // policy decision (IdlePolicy::next_decision_ns); IdlePolicy::kNever when nothing is due; -1
  // when a policy cannot tell. Bring-ups that can go now ask through the Timer instead.
  int64_t next_tick_ns() const;

  const MemoryBudget& budget() const { return budget_; }
  // Device N's budget; null when no model runs on device N.
  const MemoryBudget* device_budget(int device) const;
  // The budget model m's active bytes count against (budget(), or its device's).
  const MemoryBudget& budget_for(ModelIndex m) const;
  const ActivityTracker& activity() const { return activity_; }
  // A snapshot at now (valid until the next call into the controller).
  const FleetView& view() const;
  const ControllerOptions& options() const { return options_; }

 private:
  struct Entry;
  FleetController(ControllerOptions options, ModelHost* host, const Clock* clock, Timer* timer);
  Entry& at(ModelIndex m);
  const Entry& at(ModelIndex m) const;
  const IdlePolicy* policy_of(const Entry& e) const;
  Status bring_up(ModelIndex m, std::string_view reason);
  // For an adapter: starts bringing its base up unless it is ready (Active, not on its way
  // down); `ready` tells whether the adapter can come up now. Errors: the base is Failed and
  // backing off, or its own bring-up's.
  Status bring_up_base_of(const Entry& adapter, std::string_view reason, bool* ready);
  Status take_down(ModelIndex m, std::string_view reason);
  Status push_to_disk(ModelIndex m, std::string_view reason);
  // Starts suspending idle models to free `bytes`; returns the bytes their suspensions free.
  // Only models whose active bytes count against the same budget as for_model's are candidates.
  int64_t make_room(ModelIndex for_model, int64_t bytes);
  // Active bytes of models Suspending now, among those sharing `e`'s budget.
  int64_t freeing_bytes(const Entry& e) const;
  // The budget `e`'s active bytes count against: the active budget, or its device's.
  MemoryBudget& budget_of(const Entry& e);
  int64_t host_bytes() const;
  void dispatch_queue(ModelIndex m);
  void refuse_queue(ModelIndex m, const Status& why);
  void expire(int64_t now_ns);
  void apply_idle_policies();
  void enforce_host_budget();
  // Adapters: the base, once none of its adapters holds active memory, goes Suspending for the
  // take_down that waited for them.
  void finish_pending_take_down(ModelIndex base);
  bool adapters_hold_active_memory(const Entry& base) const;
  // Whether requests wait for `e` to come up: its own, or (a base) those of its adapters.
  bool requests_wait_for(const Entry& e) const;
  void note_arrival(Entry& e, int64_t now_ns, bool cold);
  void note_completion(Entry& e, int64_t now_ns, bool slo_met);
  Status unavailable_while_failed(const Entry& e, int64_t now_ns) const;

  ControllerOptions options_;
  ModelHost* host_;
  const Clock* clock_;
  Timer* timer_;
  MemoryBudget budget_;
  std::map<int, std::unique_ptr<MemoryBudget>> device_budgets_;  // by device, for models on one
  ColdStartCostEviction eviction_;
  ActivityTracker activity_;
  std::vector<std::unique_ptr<Entry>> models_;
  mutable FleetView view_;
  // The host's costs of model m, cached: read when first needed and again after each of its moves
  // completes or it is resized (the host's costs change only with its moves).
  const ModelCosts& costs_of(ModelIndex m) const;
  // Writes model i's row of view_ from its entry: called wherever a field the view shows changes
  // (transitions, moves begun and done, resizes); view_is_current() checks it.
  void sync_view(ModelIndex i) const;
  std::vector<const IdlePolicy*> policies_;  // the distinct policies governing models (fixed)
  bool any_waiting_for_room_ = false;
  int64_t queued_total_ = 0;  // requests queued over all models (scans skip when none)  // some model waits for busy models' room (tick recomputes)
};

}  // namespace tessera::fleet
