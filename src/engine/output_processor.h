// OutputProcessor: turns a sequence's verified tokens into its output. For each token it builds
// the token's event - its piece, the text that became visible through the sequence's TextStream
// (complete UTF-8 that cannot start a stop string), with logprobs the chosen token's and the top
// alternatives' - and decides whether the request ends there and why:
//   end of generation (unless ignore_eos; no event) ─┐
//   a stop string, a closed structured-output value ─┴─> kStop
//   max_tokens or the context reached ──────────────────> kLength
// and at the end it builds the finish event: the text held back (kStop, kLength), usage and
// timings. It only computes: the engine appends the token, publishes its KV block, sends the
// events and releases the sequence.
//
//   verified token ──on_token──> {TokenEvent?, FinishReason?} ──engine──> sink
//
// Thread-safety: engine scheduler thread only (it updates the sequence's TextStream); the
// tokenizer is immutable.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/engine/request.h"
#include "tessera/engine/sequence.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::engine {

class OutputProcessor {
 public:
  // `tokenizer` must outlive this; `ctx_size`: positions per sequence (a sequence that fills
  // them finishes with kLength).
  OutputProcessor(const model::Tokenizer& tokenizer, int64_t ctx_size)
      : tokenizer_(tokenizer), ctx_size_(ctx_size) {}

  // The tokens s may still emit, the next one included: up to max_tokens or the end of the
  // context, whichever comes first (structured output keeps its value completable within it).
  int64_t budget(const Sequence& s) const;

  struct TokenOutput {
    std::optional<TokenEvent> event;     // none for an end-of-generation token
    std::optional<FinishReason> finish;  // set when the request ends with this token
  };
  // Processes token `t`, the last of s.tokens (appended by the caller). `raw_logits`: the logits
  // row t was chosen from, as the model produced it (before penalties); read only when
  // s.request.n_logprobs >= 0, then Precondition: t < raw_logits.size().
  TokenOutput on_token(Sequence& s, int32_t t, std::span<const float> raw_logits) const;

  // s's finish event for `reason`: the text its stream still held (kStop and kLength only),
  // usage, and timings from its submission to `now_ns`; `error` for kError.
  FinishEvent finish(Sequence& s, FinishReason reason, Status error, int64_t now_ns) const;

 private:
  const model::Tokenizer& tokenizer_;
  int64_t ctx_size_;
};

// Fills `top` with the k most likely tokens of `logits` (most likely first, ties: lower id) and
// their log-probabilities given `log_z` = log_sum_exp(logits); empty for k <= 0.
void top_logprobs(std::span<const float> logits, float log_z, int32_t k,
                  std::vector<TokenLogprob>& top);
// log(sum(exp(x))), computed stably.
float log_sum_exp(std::span<const float> x);

}  // namespace tessera::engine
