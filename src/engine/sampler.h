// Sampler: turns one row of logits into the next token. Pipeline, in order: logit bias,
// repetition / frequency / presence penalties over the last `penalty_last_n` tokens, then greedy
// argmax when temperature <= 0, else top-k, temperature, softmax, top-p, min-p, and a draw from
// the seeded generator. Ties are broken by the lower token id, so results are deterministic for
// a seed.
// Thread-safety: a Sampler holds its generator state; one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "tessera/base/rng.h"
#include "tessera/base/status.h"

namespace tessera::engine {

// The largest |bias| logit_bias takes (OpenAI's range).
inline constexpr float kMaxLogitBias = 100.0f;

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
  // OpenAI's logit_bias: (token id, bias in [-100, 100]) added to that token's logit before the
  // rest of the pipeline. The ends are absolute, as OpenAI describes them: -100 bans the token,
  // +100 forces it (every token without +100 is banned). Ids outside the vocabulary are skipped
  // here; the engine refuses them at submit.
  std::vector<std::pair<int32_t, float>> logit_bias;

  // kInvalidArgument naming the field when a value is out of its domain.
  Status validate() const;
};

// The distribution a Sampler draws from for one row: the kept candidates as (mass, id) with
// `total` their sum (masses are not renormalized, so draws reproduce exactly). Greedy sampling is
// one candidate of mass 1. Speculative verification reads p(x) / q(x) from these.
struct TokenDist {
  std::vector<std::pair<float, int32_t>> candidates;
  double total = 0.0;
  // Probability of `token` (0 when it was cut). Linear in the number of candidates.
  double prob(int32_t token) const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

  // Picks a token from `logits` (modified in place by penalties). `history` holds the tokens
  // seen so far (prompt and generated), most recent last.
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);
  // The distribution sample() would draw from (same pipeline; consumes no randomness).
  // `logits` is modified in place.
  void distribution(std::span<float> logits, std::span<const int32_t> history, TokenDist& out);
  // Draws one token from `dist` (non-empty) with this sampler's generator.
  int32_t draw(const TokenDist& dist);
  // A uniform number in [0, 1) from this sampler's generator (speculative acceptance tests).
  double uniform() { return rng_.uniform(); }
  bool greedy() const { return params_.temperature <= 0.0f; }

  const SamplingParams& params() const { return params_; }

 private:
  void apply_logit_bias(std::span<float> logits) const;
  void apply_penalties(std::span<float> logits, std::span<const int32_t> history) const;

  SamplingParams params_;
  Rng rng_;
  TokenDist scratch_;
};

// Index of the largest value, lowest index on ties.
int32_t argmax(std::span<const float> logits);

}  // namespace tessera::engine
