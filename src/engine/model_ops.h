// ModelOps: the work on the model besides the steps' forward passes - LoRA adapter changes and
// embeddings (engine/embedding.h) - and the registry of the adapter ids requests may name, with
// how many unfinished requests use each. The StepRunner owns it, so that everything that runs
// the model sits behind the runner. Callers on any thread hand it work, which runs:
//   before start():  on the caller's thread (the model is the caller's, as for Engine::step);
//   after start():   queued; the scheduler thread runs it between steps (run()), when no forward
//                    pass reads the model, after `wake` told it there is work;
//   after close():   refused with kUnavailable.
//
//   set_adapter / embed (any thread) ──queue──> run() (scheduler thread, between steps) ──> model
//
// Thread-safety: thread-safe. run() and close() are called by the thread that owns the model
// (the scheduler thread, or after it has been joined).
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/embedding.h"
#include "tessera/model/lora_adapter.h"
#include "tessera/model/model.h"

namespace tessera::engine {

class ModelOps {
 public:
  using EmbedCallback = std::function<void(Result<std::vector<float>>)>;
  struct Options {
    int64_t max_rows = 512;     // rows per embedding forward pass
    int64_t max_tokens = 0;     // embedding inputs longer than this are refused (the context)
    ThreadPool* pool = nullptr;  // embeddings run on it (may be null)
    // Called, with no lock of this held, after work was queued: the scheduler thread must run().
    std::function<void()> wake;
  };
  ModelOps(model::Model& model, Options options)
      : model_(model), opt_(std::move(options)) {}

  // From now on work is queued for run(). Idempotent.
  void start();
  // From now on work is refused (kUnavailable); runs the queued work: adapter changes are
  // applied (their callers are waiting), embeddings fail with kUnavailable. Idempotent.
  void close();
  // True when work is queued.
  bool pending() const;
  // Runs the queued work, in order of kind (adapter changes first). Scheduler thread, between
  // steps.
  void run();

  // Registers `adapter` under `id` (>= 0), replacing the one that had it, or with null
  // unregisters it; returns once applied (after start(), that waits for run()). Errors: the
  // model's (kUnsupported, kInvalidArgument); kUnavailable when unregistering an id that
  // unfinished requests use, or after close().
  Status set_adapter(int32_t id, std::shared_ptr<const model::LoraAdapter> adapter);
  // A request naming adapter `id` (-1: none, always granted) is accepted: counts it as a user.
  // Errors: kInvalidArgument when `id` is not registered.
  Status acquire_adapter(int32_t id);
  // That request finished. `id` -1 is ignored.
  void release_adapter(int32_t id);

  // The pooled, normalized embedding of `tokens` (compute_embedding), handed to `done` on the
  // thread that computes it: the caller's before start(), else the scheduler thread in run().
  // Errors, through `done` (possibly before this returns): kInvalidArgument (no tokens, a token
  // outside the vocabulary, more than max_tokens tokens), kUnavailable after close(), the
  // model's.
  void embed(std::vector<int32_t> tokens, Pooling pooling, EmbedCallback done);

 private:
  enum class State { kDirect, kQueued, kClosed };
  struct AdapterOp {
    int32_t id;
    std::shared_ptr<const model::LoraAdapter> adapter;
    std::promise<Status> done;
  };
  struct EmbedOp {
    std::vector<int32_t> tokens;
    Pooling pooling;
    EmbedCallback done;
  };
  // Takes the queued work (under mu_).
  void take(std::vector<std::unique_ptr<AdapterOp>>& adapters, std::vector<EmbedOp>& embeds);
  Result<std::vector<float>> compute(const std::vector<int32_t>& tokens, Pooling pooling);

  model::Model& model_;
  const Options opt_;
  mutable std::mutex mu_;
  State state_ = State::kDirect;
  std::vector<std::unique_ptr<AdapterOp>> adapter_ops_;
  std::vector<EmbedOp> embed_ops_;
  std::set<int32_t> adapters_;               // ids requests may name
  std::map<int32_t, int64_t> adapter_users_;  // unfinished requests per id
};

}  // namespace tessera::engine
