// EngineOptions: how an Engine is sized and scheduled (slots, KV pool, token budget, device
// sharing) and how it speculates (SpecOptions). Plain values; read by the engine, the KV pool
// sizing (kv_manager.h) and the fleet, which sizes its budgets with the same function.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tessera/base/status.h"
#include "tessera/engine/device_scheduler.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::engine {

// Which drafter proposes tokens for speculative decoding (engine/drafter.h).
enum class SpecMethod { kNone, kNgram, kDraftModel };
std::string_view spec_method_name(SpecMethod m);  // "none", "ngram", "draft"
// Parses "none"/"off", "ngram", "draft". Errors: kInvalidArgument naming the choices.
Result<SpecMethod> parse_spec_method(std::string_view s);

struct SpecOptions {
  SpecMethod method = SpecMethod::kNone;  // the server's default for requests
  int32_t max_draft = 5;       // draft tokens per sequence and step at most (adaptive below it)
  // Decode rows plus draft rows per step at most; the rows left under it are shared evenly among
  // the decoding sequences, so speculation steps back as the batch grows and stops once as many
  // sequences decode: past a few rows the step's matmuls stop being memory-bound on CPUs and
  // verifying drafts costs more than it wins (docs/PERFORMANCE.md, "Speculative decoding").
  int32_t max_rows = 4;
  int32_t ngram_min = 2;       // n-gram lookup: shortest match used
  int32_t ngram_max = 4;       // n-gram lookup: longest match tried first
  // kDraftModel: a model with the same vocabulary as the target (checked at create()).
  std::shared_ptr<model::Model> draft_model;
  std::shared_ptr<const model::Tokenizer> draft_tokenizer;
};

struct EngineOptions {
  int32_t n_threads = 0;          // compute threads; 0 = hardware concurrency
  // Sequences running at once, at most. Admission is by KV blocks and the token budget (the
  // scheduler admits while the pool holds a waiting prompt and every running sequence still gets
  // a row per step); this only caps it. Each costs a block table, not memory per context.
  int32_t max_running = 256;
  int32_t max_waiting = 1024;     // queued requests beyond which submit() refuses (429)
  int64_t ctx_size = 0;           // max positions of one sequence; 0 = the model's context length
  int32_t block_size = 16;        // positions per KV block
  // KV blocks in the pool; 0: sized by kv_memory_bytes (size_kv_pool in kv_manager.h).
  int32_t n_blocks = 0;
  // The KV pool's memory budget when n_blocks is 0: the pool takes what max_running sequences of
  // ctx_size positions need, up to this. 0: Engine::create takes default_kv_memory_bytes()
  // (kv_manager.h: a share of the memory available at start, less the weights).
  int64_t kv_memory_bytes = 0;
  int32_t max_batch_tokens = 512; // rows per forward step (chunked prefill budget)
  bool prefix_cache = true;       // reuse cached full blocks of identical prompt prefixes
  kernels::DType kv_dtype = kernels::DType::kF16;
  // Sharing the machine with other engines: when set, the engine owns no thread pool and runs
  // each iteration under a lease of this scheduler's pool (n_threads is then ignored), as the
  // client `device_client` with fair-share weight `device_weight`. Each batch's deadline (for
  // the scheduler's EDF rule) is its earliest: a sequence with no token yet is due ttft_slo_ns
  // after its submission, a decoding one tpot_slo_ns after its last token.
  std::shared_ptr<DeviceScheduler> device;
  std::string device_client = "engine";
  double device_weight = 1.0;
  int64_t ttft_slo_ns = 1'000'000'000;
  int64_t tpot_slo_ns = 200'000'000;
  SpecOptions spec;
};

}  // namespace tessera::engine
