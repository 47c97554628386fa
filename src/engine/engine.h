// Engine: serves many requests on one model with continuous batching and speculative decoding.
// One scheduler thread owns the model, the paged KV cache and the running batch, and runs each
// step through parts with one job each:
//
//   submit() ──> inbox ──> Scheduler ──StepPlan──> Speculator ──drafts──> StepRunner ──tokens──┐
//   cancel() ──> cancels ─┘    │ (admit, plan, preempt)       (batch, forward, sample/verify)  │
//                              └──── KvManager: blocks, prefix cache, lookahead, rollback      │
//   sink <──events── OutputProcessor (text, stop strings, logprobs, finish reasons) <──────────┘
//
// The StepRunner alone runs the target model (the draft model is the Speculator's); between
// steps it also applies adapter changes and computes embeddings (ModelOps). The engine itself
// does intake, cancellation, the loop, events (token, finish), timings and stats.
//
// Thread-safety: submit, cancel, stats, drain and stop are thread-safe. step() is for tests that
// drive the engine without its thread (do not mix with start()).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/device_scheduler.h"
#include "tessera/engine/engine_options.h"
#include "tessera/engine/prefix_blocks.h"
#include "tessera/engine/embedding.h"
#include "tessera/engine/request.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::engine {

// Verifications counted by accepted drafts: bucket i holds those that accepted i drafts.
inline constexpr int32_t kMaxDraftTokens = 16;
using SpecHistogram = std::array<int64_t, kMaxDraftTokens + 1>;

// A consistent snapshot for /metrics.
struct EngineStats {
  int64_t waiting = 0;            // queued, not yet admitted
  int64_t running = 0;            // admitted sequences (prefilling or decoding)
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_used = 0;     // referenced by a sequence
  int64_t kv_blocks_cached = 0;   // unreferenced but kept for prefix reuse (evictable)
  int64_t prefix_queries = 0;     // prompt blocks looked up in the prefix cache
  int64_t prefix_hits = 0;        // of which were found
  int64_t prompt_tokens = 0;      // totals since start
  int64_t generated_tokens = 0;
  int64_t preemptions = 0;
  int64_t iterations = 0;
  int64_t last_batch_rows = 0;
  // Speculative decoding: draft tokens verified, of which accepted; verifications (one per
  // sequence and step that had drafts) by accepted count.
  int64_t spec_draft_tokens = 0;
  int64_t spec_accepted_tokens = 0;
  SpecHistogram spec_accepted_histogram{};
  // Structured output: wall time (the engine's Clock) spent in the token constraint - masking the
  // logits, keeping the value completable, advancing past the token - and the output tokens it
  // decided. constraint_ns / constrained_tokens is its cost per constrained token.
  int64_t constraint_ns = 0;
  int64_t constrained_tokens = 0;
};

class Engine {
 public:
  // Builds an engine over `model` (shared, kept alive) and `tokenizer` (kept alive). `clock` null
  // means the real clock. Errors: kInvalidArgument for bad options, kResourceExhausted when the KV
  // pool cannot be allocated.
  static Result<std::unique_ptr<Engine>> create(std::shared_ptr<model::Model> model,
                                                std::shared_ptr<const model::Tokenizer> tokenizer,
                                                const EngineOptions& options,
                                                const Clock* clock = nullptr);
  ~Engine();  // stop()s

  // Starts the scheduler thread. Idempotent.
  void start();
  // Cancels everything (sinks get kCancelled) and joins the thread. Idempotent.
  void stop();
  // Refuses new requests (kUnavailable), waits until in-flight ones finish or `timeout` passes,
  // then stop()s. Returns true if all finished in time.
  bool drain(std::chrono::milliseconds timeout);

  // Queues a request. On success the sink will receive its events. Errors (the sink is not
  // called): kInvalidArgument (empty prompt, bad sampling, token out of vocabulary),
  // kOutOfRange (prompt does not fit the context), kResourceExhausted (waiting queue full),
  // kUnavailable (draining or stopped).
  Result<RequestId> submit(Request request, EventSink sink);
  // Cancels a queued or running request: its blocks are freed and its sink gets kCancelled.
  // Unknown or finished ids are ignored.
  void cancel(RequestId id);

  // LoRA adapters (model/lora_adapter.h) that requests name by Request::adapter_id: registers
  // `adapter` under `id` (>= 0), replacing the adapter that had it, or with null unregisters it.
  // Applied between steps by the scheduler thread; returns once applied. Requests naming an id
  // that is not registered are refused at submit (kInvalidArgument).
  // Errors: the model's (kUnsupported, kInvalidArgument); kUnavailable when unregistering an id
  // that unfinished requests use, or when the engine is stopped.
  Status set_adapter(int32_t id, std::shared_ptr<const model::LoraAdapter> adapter);

  // Embeddings (engine/embedding.h): computes the pooled, normalized final hidden state of
  // `tokens` on the scheduler thread between steps (it alone runs the model; generation pauses
  // for that forward pass, as for a prefill chunk) and hands it to `done` on that thread (`done`
  // must not block). Without a started thread it runs on the caller's. Errors, through `done`
  // (possibly on the calling thread, before this returns): kInvalidArgument (no tokens, a token
  // outside the vocabulary, more tokens than ctx_size), kUnavailable (stopping or stopped), the
  // model's (kUnsupported for architectures without hidden states).
  using EmbedCallback = std::function<void(Result<std::vector<float>>)>;
  void embed(std::vector<int32_t> tokens, Pooling pooling, EmbedCallback done);

  // Runs one scheduler iteration on the calling thread. Returns false when there was nothing to
  // do. For tests; not while start()ed.
  bool step();

  // Prefix blocks across engines (engine/prefix_blocks.h). Both only while the scheduler thread
  // is not running: before start(), or after stop() / drain() (checked).
  // Copies the most recently used cached blocks, up to `max_bytes`, whole chains only, into
  // storage(n) (called once, with n = the blocks' bytes; not called when none are kept).
  // Errors: storage's own.
  using BlockStorage = std::function<Result<std::span<std::byte>>(size_t n_bytes)>;
  Result<PrefixBlockSet> export_prefix_cache(int64_t max_bytes, const BlockStorage& storage) const;
  // Puts exported blocks into this engine's prefix cache as cached (evictable) blocks, keeping
  // their recency order; returns how many it took (fewer when the pool is smaller; none with
  // prefix caching off). Errors: kInvalidArgument when the set's KV format is not this engine's
  // or `bytes` is not set.bytes() long.
  Result<int64_t> import_prefix_cache(const PrefixBlockSet& set, std::span<const std::byte> bytes);
  KvBlockFormat kv_block_format() const;

  EngineStats stats() const;
  const model::ModelConfig& config() const;
  const model::Tokenizer& tokenizer() const;
  const EngineOptions& options() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::engine
