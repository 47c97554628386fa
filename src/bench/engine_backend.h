// EngineBackend: the in-process engine (engine::Engine) as a SystemUnderTest. Prompts are token
// ids (tokenized once in prepare(), not on the clock, when a sample has only text); each
// generated token is one chunk, so token counts are exact; the engine's usage gives the input
// count. Sampling is greedy unless told otherwise; `ignore_eos` makes output lengths exact.
// Thread-safety: issue() from the harness thread; callbacks come from the engine's thread.
#pragma once

#include <memory>
#include <vector>

#include "tessera/bench/system_under_test.h"
#include "tessera/engine/engine.h"
#include "tessera/engine/token_constraint.h"

namespace tessera::bench {

struct EngineBackendOptions {
  bool ignore_eos = true;
  float temperature = 0.0f;
  // Structured output for every query (its value ends the query once complete; each query gets
  // its own DfaTokenCache); null: free text.
  std::shared_ptr<const engine::StructuredOutput> structured;
};

class EngineBackend final : public SystemUnderTest {
 public:
  // `engine` is borrowed, already start()ed, and must outlive every query.
  EngineBackend(engine::Engine* engine, EngineBackendOptions options, nlohmann::json description);

  nlohmann::json describe() const override { return description_; }
  Status prepare(const QuerySampleLibrary& library) override;
  void issue(const Query& query, QueryObserver* observer) override;

 private:
  engine::Engine* engine_;
  EngineBackendOptions options_;
  nlohmann::json description_;
  const QuerySampleLibrary* library_ = nullptr;
  std::vector<std::vector<int32_t>> tokenized_;  // by sample index, for text-only samples
};

}  // namespace tessera::bench
