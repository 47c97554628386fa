// Speculative-decoding flags shared by `tessera generate`, `serve`, `bench model` and
// `bench serve`: --spec none|ngram|draft, --draft-model FILE, --spec-tokens K,
// --spec-max-rows N. A draft model loads with its own tokenizer (GGUF), or --draft-tokenizer,
// or for a llama2.c checkpoint the target's --tokenizer file; its vocabulary must equal the
// target's (checked token by token when the engine is made).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tessera/base/status.h"
#include "tessera/engine/engine_options.h"

namespace tessera::cli {

struct SpecArgs {
  std::string method;        // "" = none, unless --draft-model is given (then draft)
  std::string draft_model;
  std::string draft_tokenizer;  // for a llama2.c draft; default: the target's --tokenizer
  std::string skip_layers;      // self-speculation: the target drafts with these layers skipped
  int32_t tokens = 5;
  int32_t max_rows = 4;
};

void add_spec_options(CLI::App* cmd, SpecArgs* a);

// The engine's speculation settings for `a` (loads the draft model, or wraps `target` with
// layers skipped). `tokenizer_path` is the target's --tokenizer (used for a llama2.c draft).
// Errors: an unknown method, a draft model that does not load (with its path), --spec draft
// without a draft, a bad layer list.
Result<engine::SpecOptions> spec_options(const SpecArgs& a, const std::string& tokenizer_path,
                                         std::shared_ptr<model::Model> target,
                                         std::shared_ptr<const model::Tokenizer> target_tokenizer);

// A target model with its tokenizer and the speculation settings for it.
struct SpecTarget {
  std::shared_ptr<model::Model> model;
  std::shared_ptr<const model::Tokenizer> tokenizer;
  engine::SpecOptions spec;
};

// load_model_and_tokenizer(model_path, tokenizer_path), then spec_options for it. Errors: theirs.
// On an OpenCL device (`device` >= 0) speculation is refused (kUnsupported) until it runs there.
Result<SpecTarget> load_spec_target(const std::string& model_path, const std::string& tokenizer_path,
                                    const SpecArgs& a, int device = -1);

}  // namespace tessera::cli
