// Request lengths for simulated workloads: (input, output) token pairs either fixed, or drawn with
// replacement from a recorded trace (the Azure LLM 2023 code or conversation CSV, or any format
// bench::load_trace reads), each pair kept together so their correlation survives; both kinds
// optionally clipped. Thread-safety: a LengthSampler is immutable after make(); draw() may be
// called from any thread, each with its own Rng.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/rng.h"
#include "tessera/base/status.h"

namespace tessera::sim {

struct LengthSource {
  // Empty: every request gets fixed_input_tokens / fixed_output_tokens. Otherwise a trace file
  // whose (input, output) pairs are sampled; its format is detected (bench::detect_trace_format).
  std::string trace_path;
  int32_t fixed_input_tokens = 512;
  int32_t fixed_output_tokens = 128;
  int32_t max_input_tokens = 0;   // clip (0: no clip)
  int32_t max_output_tokens = 0;  // clip (0: no clip)
};

struct RequestLengths {
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
};

// Clips to the maxima (0: none) and raises to at least 1: the one rule for every length source.
RequestLengths clip_lengths(int32_t input_tokens, int32_t output_tokens, int32_t max_input_tokens,
                            int32_t max_output_tokens);

class LengthSampler {
 public:
  // Reads the trace, if any, once. Lengths are clipped to the maxima and raised to at least 1
  // (a request always has a prompt token and produces a token; the Azure traces hold a few 0s).
  // Errors: kInvalidArgument for non-positive fixed lengths or negative maxima; the trace's
  // kNotFound / kCorruptData, and kCorruptData for a trace with no entries.
  static Result<LengthSampler> make(const LengthSource& source);

  // One pair: the fixed one, or a trace entry chosen uniformly with `rng` (one draw).
  RequestLengths draw(Rng& rng) const {
    if (pairs_.size() == 1) return pairs_[0];
    const auto i = static_cast<size_t>(rng.uniform() * static_cast<double>(pairs_.size()));
    return pairs_[i < pairs_.size() ? i : pairs_.size() - 1];
  }
  // Mean lengths of the pairs drawn from (after clipping), for sizing.
  double mean_input_tokens() const;
  double mean_output_tokens() const;
  // "fixed 512+128" or "AzureLLMInferenceTrace_code.csv (8819 pairs)", with the clips if any.
  const std::string& describe() const { return description_; }

 private:
  LengthSampler() = default;
  std::vector<RequestLengths> pairs_;
  std::string description_;
};

}  // namespace tessera::sim
