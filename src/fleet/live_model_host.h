// LiveModelHost: the ModelHost of the live server. Per model it owns the model::Model (weights
// mmapped, opened once; retried on a load if the file did not open), its tokenizer, a
// TieredRegion over the weights, the prefix blocks kept across a suspension (kept_prefix.h) and
// an engine::Engine while Active; and, per request, the payload (prompt, sink) and the fleet id
// -> engine id map.
// The controller's calls (begin_move, dispatch, reject, costs) only record or hand over: a move
// is queued and carried out later by carry_out() (prefault + engine creation, or drain + tier
// move: seconds of I/O) with no lock of the controller held, then completed by complete_move();
// sinks of refused requests are deferred until the controller's lock is released.
// Adapters (FleetModelSpec::parent set) are entries of their own without an engine: Active =
// registered in the base's engine (Engine::set_adapter under the entry's adapter id), Suspended =
// the loaded LoraAdapter kept in this process (the host tier), Evicted/Unloaded = its file only.
// Their requests go to the base's engine with Request::adapter_id set; suspending one waits until
// none of its requests is unfinished (the engine refuses the unregistration until then).
// Thread-safety: the ModelHost methods, stash(), take_*(), complete_move() and drain_finished()
// are called under the owner's controller lock; carry_out() under the owner's move lock only;
// engine(), cancel_running() and status getters from any thread. Sinks run on engine threads.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/engine/device_scheduler.h"
#include "tessera/engine/engine.h"
#include "tessera/fleet/kept_prefix.h"
#include "tessera/fleet/memory_tier.h"
#include "tessera/fleet/model_host.h"
#include "tessera/model/lora_adapter.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::fleet {

struct FleetModelSpec;
class FleetController;

struct LiveHostOptions {
  int32_t io_threads = 4;
  int64_t keep_prefix_bytes = int64_t{64} << 20;
  int64_t drain_timeout_ns = 30'000'000'000;
  bool images_on_disk = false;  // repacked images wait on disk (a host budget is set)
  std::shared_ptr<engine::DeviceScheduler> device;
  const Clock* clock = nullptr;
  // Called on the engine thread after a request's finish is recorded (outside the host's locks;
  // it must not call into the host): the control thread re-plans its next wake-up, since a model
  // going idle starts its keep-alive. May be empty.
  std::function<void()> on_finished;
};

class LiveModelHost final : public ModelHost {
 public:
  struct Model {
    std::string name, path, tokenizer_path;
    int device = -1;  // FleetModelSpec::device
    engine::EngineOptions engine_options;
    std::shared_ptr<model::Model> model;  // null while the file does not open
    std::shared_ptr<const model::Tokenizer> tokenizer;
    std::unique_ptr<TieredRegion> region;  // null when the weights are not one file mapping
    int64_t weight_bytes = 0;
    int64_t kv_bytes = 0;
    std::string open_error;  // why the file did not open (empty when open)
    KeptPrefix kept;
    // Adapters: the base's index and the engine adapter id (-1 for a base), and the adapter
    // while it is loaded (Active or Suspended; read and written by the move thread only).
    ModelIndex parent = -1;
    int32_t adapter_id = -1;
    std::shared_ptr<const model::LoraAdapter> adapter;
    int64_t active_bytes() const { return weight_bytes + kv_bytes; }
  };

  explicit LiveModelHost(LiveHostOptions options);
  ~LiveModelHost() override;

  // Opens `spec`'s files (mmap, tokenizer, repacked image set aside); on failure the model is
  // kept with open_error set. Call before the controller exists.
  // An adapter's base must have been added before it (FleetManager::create orders them).
  void add(const FleetModelSpec& spec);
  int32_t size() const { return static_cast<int32_t>(models_.size()); }
  Model& model(ModelIndex m) { return *models_[static_cast<size_t>(m)]; }
  const Model& model(ModelIndex m) const { return *models_[static_cast<size_t>(m)]; }
  void set_controller(FleetController* c) { controller_ = c; }
  // Resolves each model's KV pool (after every add(); see FleetManager::create).
  void size_kv_pools(int64_t active_budget_bytes);
  // Thread-safe reads of what open() publishes (null / empty while the file does not open).
  std::shared_ptr<model::Model> model_ptr(ModelIndex m) const;
  std::shared_ptr<const model::Tokenizer> tokenizer_ptr(ModelIndex m) const;
  std::string open_error(ModelIndex m) const;

  // ModelHost.
  void begin_move(ModelIndex m, Move move) override;
  Status dispatch(ModelIndex m, engine::RequestId id) override;
  void reject(ModelIndex m, engine::RequestId id, const Status& why) override;
  ModelCosts costs(ModelIndex m) const override;

  // The request's payload, before the controller admits it.
  void stash(ModelIndex m, engine::RequestId id, engine::Request request, engine::EventSink sink,
             int64_t submit_ns);
  // An embedding's payload likewise: dispatched as Engine::embed on the model's engine, `done`
  // called once (on an engine thread, or deferred past the controller's lock when refused);
  // it counts as a request of the model (arrival, in flight, TTFT SLO up to its result).
  void stash_embedding(ModelIndex m, engine::RequestId id, std::vector<int32_t> tokens,
                       engine::Pooling pooling, engine::Engine::EmbedCallback done,
                       int64_t submit_ns);
  void forget(engine::RequestId id);  // a refused request: its sink is never called

  std::optional<std::pair<ModelIndex, Move>> take_move();
  Status carry_out(ModelIndex m, Move move);
  // Installs the engine of a finished bring-up (or drops it on error), then tells the controller.
  void complete_move(ModelIndex m, Move move, Status result);
  std::vector<std::function<void()>> take_deferred();
  // Feeds the controller the requests that finished on engine threads.
  void drain_finished();

  // The engine that runs `m`'s requests: its own, or an adapter's base's; null when not Active.
  std::shared_ptr<engine::Engine> engine(ModelIndex m) const;
  void cancel_running(ModelIndex m, engine::RequestId id);
  // Takes every engine (for stop()).
  std::vector<std::shared_ptr<engine::Engine>> take_engines();

 private:
  struct EmbedJob {
    std::vector<int32_t> tokens;
    engine::Pooling pooling = engine::Pooling::kMean;
    engine::Engine::EmbedCallback done;
  };
  struct Payload {
    ModelIndex model = 0;
    engine::Request request;
    engine::EventSink sink;
    int64_t submit_ns = 0;
    std::optional<EmbedJob> embed;  // set: an embedding, not a generation
  };
  struct Finished {
    ModelIndex model;
    engine::RequestId id;
    int64_t at_ns;
    bool slo_met;
  };
  Status open(Model& s);
  Status open_adapter(Model& s);
  Status carry_out_adapter(Model& s, Move move);
  // Cancels, in `e`, the running requests of the adapter with `adapter_id`.
  void cancel_all_running(int32_t adapter_id, engine::Engine& e);
  engine::EventSink wrap_sink(ModelIndex m, engine::RequestId id, int64_t submit_ns,
                              engine::EventSink sink);
  Status dispatch_embedding(ModelIndex m, engine::RequestId id, engine::Engine& e, Payload p);
  // Records a request's finish for the controller (drain_finished) and wakes the control thread.
  void record_finished(ModelIndex m, engine::RequestId id, int64_t at_ns, bool slo_met);

  LiveHostOptions options_;
  FleetController* controller_ = nullptr;
  // Guards what open() publishes (model, tokenizer, region, sizes, open_error): a model that did
  // not open at start is opened by a later load while other threads read.
  mutable std::mutex open_mu_;
  int64_t kv_share_ = -1;
  std::vector<std::unique_ptr<Model>> models_;
  // Controller-lock state.
  std::vector<std::pair<ModelIndex, Move>> moves_;
  std::vector<std::function<void()>> deferred_;
  std::map<engine::RequestId, Payload> payloads_;
  std::vector<std::shared_ptr<engine::Engine>> staged_;  // per model: being brought up / drained
  // Engines of Active models (read by any thread).
  mutable std::mutex engines_mu_;
  std::vector<std::shared_ptr<engine::Engine>> engines_;
  // Fleet id -> engine id of dispatched requests (leaf lock; sinks take it).
  mutable std::mutex ids_mu_;
  std::map<engine::RequestId, std::pair<ModelIndex, engine::RequestId>> running_;
  // Requests finished on engine threads, not yet told to the controller (leaf lock).
  mutable std::mutex finished_mu_;
  std::vector<Finished> finished_;
};

}  // namespace tessera::fleet
