#include "spec_args.h"

#include <fmt/format.h>

#include "common.h"
#include "tessera/model/layer_skip.h"

namespace tessera::cli {

void add_spec_options(CLI::App* cmd, SpecArgs* a) {
  cmd->add_option("--spec", a->method,
                  "Speculative decoding: none, ngram (prompt lookup) or draft (--draft-model)");
  cmd->add_option("--draft-model", a->draft_model,
                  "Draft model with the target's vocabulary (implies --spec draft)");
  cmd->add_option("--draft-tokenizer", a->draft_tokenizer,
                  "Tokenizer of a llama2.c draft model (default: the target's --tokenizer)");
  cmd->add_option("--draft-skip-layers", a->skip_layers,
                  "Self-speculation: the target drafts for itself with these layers skipped, "
                  "e.g. 10-17 (implies --spec draft; no second file)");
  cmd->add_option("--spec-tokens", a->tokens, "Draft tokens per step at most (adaptive below)")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  cmd->add_option("--spec-max-rows", a->max_rows,
                  "Decode plus draft rows per step at most (shared among decoding sequences)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
}

Result<engine::SpecOptions> spec_options(const SpecArgs& a, const std::string& tokenizer_path,
                                         std::shared_ptr<model::Model> target,
                                         std::shared_ptr<const model::Tokenizer> target_tokenizer) {
  engine::SpecOptions s;
  const bool has_draft = !a.draft_model.empty() || !a.skip_layers.empty();
  if (!a.draft_model.empty() && !a.skip_layers.empty()) {
    return invalid_argument("--draft-model and --draft-skip-layers are two different drafts: pick one");
  }
  const std::string method = a.method.empty() && has_draft ? "draft" : a.method;
  TS_ASSIGN_OR_RETURN(s.method, engine::parse_spec_method(method));
  s.max_draft = a.tokens;
  s.max_rows = a.max_rows;
  if (s.method == engine::SpecMethod::kDraftModel && !a.skip_layers.empty()) {
    TS_ASSIGN_OR_RETURN(const std::vector<int32_t> layers, model::parse_layer_list(a.skip_layers));
    TS_ASSIGN_OR_RETURN(s.draft_model, model::LayerSkipModel::create(std::move(target), layers));
    s.draft_tokenizer = std::move(target_tokenizer);
  } else if (s.method == engine::SpecMethod::kDraftModel) {
    if (a.draft_model.empty()) {
      return invalid_argument("--spec draft needs --draft-model FILE or --draft-skip-layers LIST");
    }
    // A GGUF draft brings its own vocabulary (checked against the target's); a llama2.c one
    // takes --draft-tokenizer, else the target's tokenizer file.
    std::string tok = a.draft_tokenizer;
    if (tok.empty() && !a.draft_model.ends_with(".gguf")) tok = tokenizer_path;
    Result<LoadedModel> d = load_model_and_tokenizer(a.draft_model, tok);
    if (!d.is_ok()) return d.status().with_context("loading the draft model " + a.draft_model);
    s.draft_model = std::move(d->model);
    s.draft_tokenizer = std::move(d->tokenizer);
  }
  return s;
}

Result<SpecTarget> load_spec_target(const std::string& model_path, const std::string& tokenizer_path,
                                    const SpecArgs& a, int device) {
  if (device >= 0 && ((!a.method.empty() && a.method != "none") || !a.draft_model.empty() ||
                      !a.skip_layers.empty())) {
    return unsupported("speculative decoding does not run on the OpenCL device yet: use "
                       "--device cpu");
  }
  TS_ASSIGN_OR_RETURN(LoadedModel loaded,
                      load_model_and_tokenizer(model_path, tokenizer_path, device));
  SpecTarget t{std::move(loaded.model), std::move(loaded.tokenizer), {}};
  TS_ASSIGN_OR_RETURN(t.spec, spec_options(a, tokenizer_path, t.model, t.tokenizer));
  return t;
}

}  // namespace tessera::cli
