// Generator: runs one sequence from prompt to stop condition on a Model: batched prefill of the
// whole prompt, then one token per step, streaming text as it becomes valid UTF-8. The simple
// single-user path behind `tessera generate`; the serving scheduler batches many sequences.
// Thread-safety: one Generator per thread; the model and pool are used only during generate().
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/sampler.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::engine {

struct GenerateOptions {
  int32_t max_tokens = 128;
  SamplingParams sampling;
  bool stop_at_end_of_generation = true;  // stop on EOS/EOT tokens
  int32_t prefill_chunk = 512;            // prompt rows per forward step
  kernels::DType kv_dtype = kernels::DType::kF16;  // KV cache storage: f16 (default) or f32
  // LoRA adapter applied to every row (an id registered with Model::set_adapter); -1 = none.
  int32_t adapter_id = -1;
};

enum class StopReason { kLength, kEndOfGeneration, kCallback };
std::string_view stop_reason_name(StopReason r);  // "length", "stop", "cancelled"

struct GenerateResult {
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> tokens;  // generated ids
  std::string text;             // decoded continuation
  StopReason stop_reason = StopReason::kLength;
  std::vector<float> last_prompt_logits;  // logits after the last prompt token
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;  // time in single-token forward steps
  int32_t decode_steps = 0;     // number of those steps
};

// Called with each complete UTF-8 chunk of the continuation; return false to stop.
using TextCallback = std::function<bool(std::string_view)>;

class Generator {
 public:
  // `tokenizer` may be null (then text stays empty). `clock` null means the real clock.
  Generator(model::Model& model, const model::Tokenizer* tokenizer, ThreadPool* pool,
            const Clock* clock = nullptr);

  // Generates from `prompt_tokens` (non-empty; BOS already included if wanted).
  // Errors: kInvalidArgument (bad params, empty prompt, token out of range), kOutOfRange when
  // prompt plus max_tokens exceeds the model's context.
  Result<GenerateResult> generate(std::span<const int32_t> prompt_tokens,
                                  const GenerateOptions& options, const TextCallback& on_text = {});

 private:
  model::Model& model_;
  const model::Tokenizer* tokenizer_;
  ThreadPool* pool_;
  const Clock* clock_;
};

// Length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence.
size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace tessera::engine
