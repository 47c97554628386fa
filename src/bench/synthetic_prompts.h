// Synthetic prompts: lengths drawn from distributions, and prompt content of a chosen length.
// With the target's tokenizer the prompt is exact token ids (and their decoded text); without
// one it is text of common English words that are one token each in the usual vocabularies
// (Llama's SentencePiece, GPT-2-style BPE), so its length is close, and the server's `usage`
// reports the exact count. Content is a deterministic function of a seed, which is how trace
// replay reproduces shared prefix blocks exactly.
// Thread-safety: const methods are safe from any thread; Rng is the caller's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/rng.h"
#include "tessera/base/status.h"
#include "tessera/bench/query_sample_library.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::bench {

enum class LengthDist { kFixed, kUniform, kNormal, kExponential };

struct LengthSpec {
  LengthDist dist = LengthDist::kFixed;
  double a = 128;  // fixed: the value; uniform: low; normal: mean; exponential: mean
  double b = 0;    // uniform: high (inclusive); normal: standard deviation
};
// "N", "fixed:N", "uniform:LO:HI", "normal:MEAN:STD", "exp:MEAN". Errors: kInvalidArgument.
Result<LengthSpec> parse_length_spec(std::string_view text);
std::string format_length_spec(const LengthSpec& spec);
// A length >= 1 (draws below 1 are clamped to 1).
int32_t draw_length(const LengthSpec& spec, Rng& rng);

class PromptSynthesizer {
 public:
  // `tokenizer` (borrowed, may be null) makes prompts exact token ids for that vocabulary.
  explicit PromptSynthesizer(const model::Tokenizer* tokenizer = nullptr);

  // Starts a prompt (BOS when the tokenizer has one: it counts towards the length).
  void begin(QuerySample& s) const;
  // Appends `n` tokens (or one-token words) drawn from `rng`.
  void append(int32_t n, Rng& rng, QuerySample& s) const;
  // Sets input_tokens (and the text, decoded from the tokens, when there is a tokenizer).
  void finish(QuerySample& s) const;

  // A whole prompt of `n` tokens.
  QuerySample make(int32_t n_input, int32_t max_output, Rng& rng) const;

 private:
  const model::Tokenizer* tokenizer_;
  std::vector<int32_t> pool_;  // ordinary tokens to draw from
};

struct SyntheticOptions {
  LengthSpec input_len{LengthDist::kFixed, 128, 0};
  LengthSpec output_len{LengthDist::kFixed, 128, 0};
  int64_t n_prompts = 100;
  uint64_t seed = 0;
};
InMemoryLibrary make_synthetic_library(const SyntheticOptions& options,
                                       const PromptSynthesizer& synth);

// A JSONL file of prompts, one object a line: "prompt" (or "text"), optionally "max_tokens" /
// "output_len" (else `default_output` is used). With a tokenizer the prompt is encoded (exact).
// Errors: kNotFound, kCorruptData naming the line.
Result<InMemoryLibrary> load_prompt_file(const std::string& path, const LengthSpec& default_output,
                                         uint64_t seed, const model::Tokenizer* tokenizer);

}  // namespace tessera::bench
