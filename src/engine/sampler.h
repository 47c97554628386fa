// Sampler: turns one row of logits into the next token. Pipeline, in order: repetition /
// frequency / presence penalties over the last `penalty_last_n` tokens, then greedy argmax when
// temperature <= 0, else top-k, temperature, softmax, top-p, min-p, and a draw from the seeded
// generator. Ties are broken by the lower token id, so results are deterministic for a seed.
// Thread-safety: a Sampler holds its generator state; one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/base/rng.h"
#include "tessera/base/status.h"

namespace tessera::engine {

struct SamplingParams {
  float temperature = 0.8f;  // <= 0: greedy
  int32_t top_k = 40;        // <= 0: whole vocabulary
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off; keeps tokens with p >= min_p * p_max
  float repetition_penalty = 1.0f;  // 1: off; > 1 discourages repeats (CTRL-style)
  float frequency_penalty = 0.0f;   // OpenAI-style, per occurrence
  float presence_penalty = 0.0f;    // OpenAI-style, once per token present
  int32_t penalty_last_n = 64;      // window of recent tokens the penalties look at
  uint64_t seed = 0;

  // kInvalidArgument naming the field when a value is out of its domain.
  Status validate() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

  // Picks a token from `logits` (modified in place by penalties). `history` holds the tokens
  // seen so far (prompt and generated), most recent last.
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);

  const SamplingParams& params() const { return params_; }

 private:
  void apply_penalties(std::span<float> logits, std::span<const int32_t> history) const;

  SamplingParams params_;
  Rng rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // scratch
};

// Index of the largest value, lowest index on ties.
int32_t argmax(std::span<const float> logits);

}  // namespace tessera::engine
