// FleetManager: many models served from one process - the live fleet. It is a thread-safe shell
// over the parts that do the work:
//   FleetController (fleet_controller.h)  decisions and bookkeeping: lifecycles, the queue of
//                                         requests waiting for a model, budgets, accounting,
//                                         policies; single-threaded, no I/O (the simulator runs
//                                         the same object over a cost model)
//   LiveModelHost (live_model_host.h)     carries the moves out: model files, memory tiers,
//                                         engines, kept prefix blocks, request payloads
// The controller runs under one lock held only for bookkeeping; moves (prefault + engine, drain +
// tier move: seconds) run outside it, one at a time, on the control thread or the caller of a
// synchronous move. So submit, cancel, stats and status never wait for a move.
//
//   load     Unloaded|Evicted|Failed -> Loading -> Active   prefault weights, create the engine
//   suspend  Active -> Suspending -> Suspended              drain + destroy the engine (frees the
//                                                           KV pool, keeping its most recently
//                                                           used prefix-cache blocks in the host
//                                                           tier), weights to the host tier
//   resume   Suspended -> Resuming -> Active                prefault weights in parallel, engine
//                                                           (the kept prefix blocks put back)
//   evict    Suspended -> Evicted                           weights (and kept blocks) to disk
//
// submit() to an Active model forwards to its engine; to any other state it queues the request
// and the control thread brings the model up. A queued request not dispatched by its deadline,
// or whose model fails to come up, finishes with kError + kUnavailable naming the cause (503 +
// Retry-After at the HTTP edge): a queued request never hangs. A model whose file does not open
// (corrupt, vanished, unsupported) does not stop the fleet: it is Failed with the error in
// status(), its requests are refused at once while a retry backs off, and a later request or an
// operator load retries it.
// The control thread wakes when a request needs a model, when the policies' next decision is
// due (FleetController::next_tick_ns), or every tick (real time) at the latest, and runs tick(). Decisions read time only from the injected Clock, so tests drive tick() under a
// FakeClock without the thread.
// Request ids are the manager's own (stable across engine re-creation); events carry them.
// Thread-safety: every public method is thread-safe. Event sinks run on engine threads (or, for
// queued requests that fail, on the thread that found them failed, outside every lock).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/engine/device_scheduler.h"
#include "tessera/engine/engine.h"
#include "tessera/engine/request.h"
#include "tessera/fleet/activity_tracker.h"
#include "tessera/fleet/eviction_policy.h"
#include "tessera/fleet/fleet_controller.h"
#include "tessera/fleet/idle_policy.h"
#include "tessera/fleet/lifecycle.h"
#include "tessera/fleet/memory_budget.h"
#include "tessera/model/format/metadata.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::fleet {

class LiveModelHost;

struct FleetModelSpec {
  std::string name;                // unique, non-empty
  std::string path;                // GGUF or llama2.c checkpoint
  std::string tokenizer;           // tokenizer file; empty: the GGUF's own
  engine::EngineOptions engine;    // per-model engine options
  bool pinned = false;             // never suspended or evicted by a policy
  // This model's idle policy; null: the fleet's (FleetOptions::idle_policy). Models sharing a
  // policy object are decided on together (one decide() call per distinct policy).
  std::shared_ptr<const IdlePolicy> idle_policy;
  // Non-empty: this entry is a LoRA adapter (PEFT directory or GGUF LoRA at `path`) of the fleet
  // model so named, served as `name` (by convention "<parent>:<adapter>"); `tokenizer` and
  // `engine` are the base's. See FleetController's "Adapters" for its lifecycle.
  std::string parent;
  // Where it runs: -1 the CPU; N OpenCL device N (model/device_decoder.h). On a device, device
  // memory is the top tier: the weights are uploaded when the model comes up and freed when it
  // is suspended (the host copy, the file mapping, stays in the host tier).
  int device = -1;
};

struct FleetOptions {
  int64_t active_budget_bytes = 0;          // weights + KV of brought-up models; 0: unlimited
  // Weights of Suspended models (the host tier: page cache or memfd); above it, tick() evicts
  // suspended models to disk, cheapest expected cold start per byte first. 0: unlimited.
  int64_t host_budget_bytes = 0;
  // Per device: weights + KV of the brought-up models on it (FleetModelSpec::device); room is
  // made by suspending idle models on that device. 0: unlimited.
  int64_t device_budget_bytes = 0;
  // The default idle policy (a model's own FleetModelSpec::idle_policy overrides it); null:
  // models without their own are never suspended on idleness.
  std::shared_ptr<const IdlePolicy> idle_policy;
  EvictionOptions eviction;
  int64_t request_deadline_ns = 30'000'000'000;  // how long a queued request waits for Active
  int64_t tick_ns = 100'000'000;            // control-thread wake-up period (real time)
  int32_t io_threads = 4;                   // threads prefaulting weights on resume
  // Per model: the prefix-cache blocks a suspended model keeps (most recently used, whole
  // prefixes; in the host tier, counted against host_budget_bytes). 0: none are kept.
  int64_t keep_prefix_bytes = int64_t{64} << 20;
  HistogramOptions histogram;               // idle-time histograms the adaptive policy reads
  // The compute device every model's engine shares (one pool, one iteration at a time, chosen
  // by its policy); null: each engine owns a pool of its EngineOptions::n_threads.
  std::shared_ptr<engine::DeviceScheduler> device;
  bool load_on_start = true;                // start(): bring up every model that fits, in order
  const Clock* clock = nullptr;             // null: the real clock
};

// One model's state for /v1/models, the admin API and metrics.
struct ModelStatus {
  std::string name;
  std::string path;
  std::string parent;              // an adapter's base model; empty for a model
  ModelState state = ModelState::kUnloaded;
  double time_in_state_s = 0.0;
  int64_t active_bytes = 0;        // weights + KV when up
  int64_t weight_bytes = 0;
  int64_t kept_prefix_blocks = 0;  // prefix-cache blocks kept while suspended or evicted
  int64_t kept_prefix_bytes = 0;
  int64_t resumes = 0;             // entries into Resuming
  int64_t loads = 0;               // entries into Loading
  double last_bring_up_s = 0.0;    // duration of the last load or resume (0: none yet)
  int64_t suspends = 0;            // suspensions completed
  double mean_resume_s = 0.0;      // over the resumes completed (0: none yet)
  double mean_suspend_s = 0.0;     // over the suspensions completed (0: none yet)
  int64_t queued = 0;              // requests waiting for the model to come up
  bool pinned = false;
  std::string idle_policy;         // the policy that governs it (IdlePolicy::name()); "none"
  std::string last_error;          // why it is Failed
  // Usage since create(). Memory-seconds: active bytes x seconds held (Loading, Active,
  // Resuming, Suspending); idle memory-seconds: the part with no request in flight.
  double memory_seconds = 0.0;
  double idle_memory_seconds = 0.0;
  int64_t cold_starts = 0;         // requests that arrived while the model was not Active
  int64_t in_flight = 0;           // submitted, not finished (queued ones included)
  int64_t finished = 0;            // requests finished, any outcome
  int64_t slo_met = 0;             // of which met the TTFT SLO (see EngineOptions::ttft_slo_ns)
  double ttft_slo_s = 0.0;
};

class FleetManager {
 public:
  // Opens every model (mmap + tokenizer) in Unloaded. A file's weights are not read, except where
  // the model repacks them into the kernels' layout (F16, Q8_0, Q4_0, Q4_K on CPUs with the
  // kernels): that image is made now, in an unlinked file in $TMPDIR (ImageFileRegion), and set
  // aside in the host tier, or on disk when a host budget is set (so starting many such models
  // costs a pass over each file). A model whose files do not open starts Failed with the error
  // (the others serve). Adapters (FleetModelSpec::parent) are placed after every base model (the
  // order of names() and status()); an adapter whose file does not load starts Failed.
  // Errors: kInvalidArgument for no models, empty or duplicate names, an adapter whose parent is
  // not a base model of the fleet.
  static Result<std::unique_ptr<FleetManager>> create(std::vector<FleetModelSpec> models,
                                                      FleetOptions options);
  ~FleetManager();  // stop()s; queued requests get kUnavailable, engines are stopped
  FleetManager(const FleetManager&) = delete;
  FleetManager& operator=(const FleetManager&) = delete;

  // Loads the models that fit (when options.load_on_start) and starts the control thread.
  // Idempotent. Returns the first load error, if any (the model is then Failed; others serve).
  Status start();
  // Stops the control thread, fails queued requests (kUnavailable) and stops every engine
  // (in-flight requests get kCancelled). Idempotent.
  void stop();

  // Moves, synchronous. Errors: kNotFound for an unknown name; kFailedPrecondition when the
  // model is not in a state the move starts from; kResourceExhausted when bringing it up does
  // not fit the budget even after suspending idle models; the move's own error (the model is
  // then Failed and its queued requests get the error).
  Status load(const std::string& name, std::string_view reason = "operator");
  Status suspend(const std::string& name, std::string_view reason = "operator");
  Status resume(const std::string& name, std::string_view reason = "operator");
  Status evict(const std::string& name, std::string_view reason = "operator");

  // One control pass at clock->now_ns() (what the control thread runs every tick).
  void tick();
  // FleetController::forget_activity: a benchmark's warm-up is not traffic for the policies.
  void forget_activity();

  // As engine::Engine::submit, for model `name`. Errors (the sink is not called): kNotFound,
  // kUnavailable when stopped; for an Active model the engine's own errors. A request queued for
  // a model that is not Active returns an id at once; its sink gets kError + kUnavailable if the
  // model is not up within the deadline, or the bring-up error.
  Result<engine::RequestId> submit(const std::string& name, engine::Request request,
                                   engine::EventSink sink);
  // Cancels a queued or running request; unknown or finished ids are ignored.
  void cancel(const std::string& name, engine::RequestId id);
  // As engine::Engine::embed, for model `name`, admitted like a request: run at once when the
  // model is Active, else queued while the control thread brings it up (a cold start), with the
  // same deadline and failure answers; it counts as a request of the model (arrivals, in flight,
  // idle time, the TTFT SLO up to the result). `done` runs once: on an engine thread, or on
  // this thread for errors found at once (kNotFound, kUnavailable when stopped or while the model
  // is Failed, kInvalidArgument for tokens the model cannot take, kUnsupported for an adapter:
  // embeddings come from base models).
  void embed(const std::string& name, std::vector<int32_t> tokens, engine::Pooling pooling,
             engine::Engine::EmbedCallback done);
  // Floats per embedding of model `name` (its hidden width): 0 for unknown names, adapters and
  // models whose file did not open.
  int64_t embedding_width(const std::string& name) const;

  // The engine's stats while Active; zeros otherwise (and for unknown names, and for adapters:
  // they run on their base's engine, whose stats are the base's).
  engine::EngineStats stats(const std::string& name) const;
  // Every model, in the order given to create().
  std::vector<ModelStatus> status() const;
  Result<ModelStatus> status(const std::string& name) const;
  ModelState state(const std::string& name) const;  // kUnloaded for unknown names
  std::vector<std::string> names() const;

  // Valid as long as the manager, in every state, once the model's file opened; null (tokenizer
  // and metadata: a check fails) while it does not. Precondition: `name` is known (checked).
  // For an adapter, these five are its base's.
  const model::Tokenizer& tokenizer(const std::string& name) const;
  std::shared_ptr<const model::Tokenizer> shared_tokenizer(const std::string& name) const;
  const model::Metadata& metadata(const std::string& name) const;
  // OK once the model's file opened; else kUnavailable naming why it did not (and when it is
  // retried).
  Status opened(const std::string& name) const;
  // Positions per sequence (the engine option, or the model's context).
  int64_t context_length(const std::string& name) const;

  const MemoryBudget& budget() const { return controller_->budget(); }
  // The shared compute device (FleetOptions::device); null when each engine has its own pool.
  std::shared_ptr<engine::DeviceScheduler> device() const { return options_.device; }
  const Clock& clock() const { return *clock_; }
  // Adds a listener to every model's lifecycle (see ModelLifecycle::add_listener). Call before
  // start().
  void add_listener(TransitionListener listener);

 private:
  class LiveTimer;
  FleetManager(FleetOptions options);
  int32_t index(const std::string& name) const;  // -1 when unknown
  int32_t runs_on(int32_t m) const;  // an adapter's base, else m
  // Runs `f` on the controller under its lock (finished requests fed in first), then the
  // callbacks it deferred (sinks of refused requests) with the lock released.
  template <typename F>
  auto locked(F&& f);
  // Carries out the moves the controller began, each outside the controller's lock, until none
  // is left; with `settle`, ticks again while the controller asks for an immediate tick (a
  // bring-up waiting for the room its suspensions make). Caller holds move_mu_.
  void run_moves(bool settle);
  Status operator_move(const std::string& name, Status (FleetController::*move)(int32_t, std::string_view),
                       std::string_view reason, bool bring_up);
  void control_loop();

  FleetOptions options_;
  const Clock* clock_;
  std::unique_ptr<LiveTimer> timer_;
  std::unique_ptr<LiveModelHost> host_;
  std::unique_ptr<FleetController> controller_;
  std::vector<std::string> names_;

  // Lock order: move_mu_ -> ctl_mu_ -> (host leaf locks, wake_mu_).
  std::mutex move_mu_;  // serializes carrying out moves (seconds of I/O)
  mutable std::mutex ctl_mu_;  // the controller and the host's controller-side state
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool wake_ = false;
  bool replan_ = false;  // a request finished: the next decision may have moved
  bool stopping_ = false;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  std::thread control_;
  std::atomic<engine::RequestId> next_id_{1};
};

}  // namespace tessera::fleet
