// The system under test of `bench serve` from its --target: the null backend, the in-process
// engine (inproc:MODEL) or an OpenAI-compatible HTTP endpoint, with what it needs kept alive
// (and --response-format applied to every query), and its speculation and structured-output
// counters (the engine's, or a Tessera server's /metrics).
// Thread-safety: one owner; the backend's own rules apply to it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/bench/constraint_counters.h"
#include "tessera/bench/serve_bench_options.h"
#include "tessera/bench/spec_counters.h"
#include "tessera/bench/system_under_test.h"
#include "tessera/engine/engine.h"

namespace tessera::bench {

struct ServeTarget {
  std::shared_ptr<model::Model> model;
  std::shared_ptr<const model::Tokenizer> tokenizer;  // null: prompts by byte count
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<SystemUnderTest> sut;
  std::string name;
  std::string url;  // the HTTP target's, else empty

  // Draft and accepted tokens so far, where the target counts them.
  std::optional<SpecCounters> spec_counters() const;
  // Structured output's constraint time and tokens so far, where the target counts them.
  std::optional<ConstraintCounters> constraint_counters() const;
  // The --response-format object sent with every query (null when none).
  nlohmann::json response_format;
};

// Errors: an unknown target form, a bad --api, --body-variants or --response-format (the null
// target refuses one: it generates nothing to constrain), the model's and the engine's.
Result<ServeTarget> make_serve_target(const ServeBenchOptions& options);

// One JSON object per non-empty line. Errors: kNotFound (unreadable), kInvalidArgument naming the
// line that is not a JSON object, or a file with none.
Result<std::vector<nlohmann::json>> read_body_variants(const std::string& path);

}  // namespace tessera::bench
