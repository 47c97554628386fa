// Speculative decoding benchmark: one model, the same requests decoded with speculation off and
// on, alternating which goes first each repetition (so both share every minute of a machine
// whose bandwidth drifts), in-process through the engine (scheduler, drafter, verifier).
// Per run: decode tokens/s per stream ((n - 1) tokens after the first over the time after the
// first; median over streams), output tokens/s of the whole batch (all tokens over the run), and
// the acceptance rate (accepted / drafted). Per repetition: on/off ratios of both rates.
// Thread-safety: runs on the calling thread; uses the engine's own pool.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/bench/stats.h"
#include "tessera/engine/engine_options.h"
#include "tessera/engine/sampler.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::bench {

struct SpecBenchOptions {
  std::vector<std::vector<int32_t>> prompts;  // stream i uses prompts[i % size]; non-empty
  int32_t gen_tokens = 128;                   // per stream (EOS ignored)
  int32_t streams = 1;                        // concurrent requests
  int32_t reps = 3;
  engine::SamplingParams sampling;            // default: greedy
  engine::EngineOptions engine;               // engine.spec: the "on" configuration
  SpecBenchOptions() { sampling.temperature = 0.0f; }
};

struct SpecRun {
  bool speculative = false;
  double decode_tps = 0.0;   // median over streams
  double output_tps = 0.0;   // all streams
  double seconds = 0.0;
  int64_t output_tokens = 0;
  int64_t draft_tokens = 0;
  int64_t accepted_tokens = 0;
  int64_t steps = 0;          // engine iterations
  bool same_tokens = true;    // greedy: "on" produced what "off" did (always true when sampling)
  double acceptance() const {
    return draft_tokens > 0 ? static_cast<double>(accepted_tokens) / static_cast<double>(draft_tokens) : 0.0;
  }
};

struct SpecBenchResult {
  std::vector<SpecRun> runs;             // in the order run
  std::vector<double> decode_ratios;     // per repetition: on / off
  std::vector<double> output_ratios;
  Summary decode_ratio() const { return summarize(decode_ratios); }
  Summary output_ratio() const { return summarize(output_ratios); }
};

// The default input-grounded task: a short children's story (written for this benchmark, in the
// vocabulary of TinyStories-trained models; ~270 tokens with their 512-token vocabulary, so that
// a rewrite fits their 512-position context), then "Here is the same story again." and its first
// sentence: a model that follows its context rewrites the text, which n-gram lookup can draft.
const char* default_spec_prompt();

// Errors: invalid options, the engine's (creation, a failed step).
Result<SpecBenchResult> run_spec_bench(std::shared_ptr<model::Model> model,
                                       std::shared_ptr<const model::Tokenizer> tokenizer,
                                       const SpecBenchOptions& options);

}  // namespace tessera::bench
