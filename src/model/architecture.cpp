#include "tessera/model/architecture.h"

#include <fmt/format.h>

#include "tessera/model/format/model_file.h"
#include "tessera/model/families.h"
#include "tessera/model/hf_checkpoint.h"
#include "tessera/model/llama.h"

namespace tessera::model {

const std::vector<Architecture>& architectures() {
  // Explicit list rather than self-registration: static libraries drop unreferenced
  // registration objects, and one list is easy to read.
  static const std::vector<Architecture> kArchitectures = {
      llama_architecture(),
      qwen2_architecture(),
      qwen3_architecture(),
      mistral_architecture(),
      phi3_architecture(),
      gemma2_architecture(),
      gemma3_architecture(),
  };
  return kArchitectures;
}

const Architecture* find_architecture(std::string_view name) {
  for (const auto& a : architectures()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

Result<std::unique_ptr<Model>> build_model(std::shared_ptr<const ModelFile> file,
                                           const LoadOptions& options) {
  TS_ASSIGN_OR_RETURN(std::string arch, file->metadata.get_string("general.architecture"));
  const Architecture* a = find_architecture(arch);
  if (a == nullptr) {
    std::string known;
    for (const auto& x : architectures()) known += (known.empty() ? "" : ", ") + std::string(x.name);
    return unsupported(fmt::format("architecture '{}' is not supported (supported: {})", arch, known));
  }
  return a->build(std::move(file), options);
}

Result<std::unique_ptr<Model>> load_model(const std::string& path, const LoadOptions& options) {
  TS_ASSIGN_OR_RETURN(ModelFile f, open_model_path(path));
  auto model = build_model(std::make_shared<const ModelFile>(std::move(f)), options);
  if (!model.is_ok()) return model.status().with_context("loading " + path);
  return model;
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer_for(const Model& model,
                                                      const std::string& tokenizer_path) {
  const int32_t n_vocab = static_cast<int32_t>(model.config().n_vocab);
  std::unique_ptr<Tokenizer> tok;
  if (!tokenizer_path.empty()) {
    auto f = open_model_file(tokenizer_path);
    if (f.is_ok() && f->format == FileFormat::kGguf) {
      auto t = make_tokenizer(f->metadata);
      if (!t.is_ok()) return t.status().with_context("loading tokenizer " + tokenizer_path);
      tok = std::move(t).value();
    } else {
      auto t = load_llama2c_tokenizer(tokenizer_path, n_vocab);
      if (!t.is_ok()) return t.status().with_context("loading tokenizer " + tokenizer_path);
      tok = std::move(t).value();
    }
  } else if (model.file().format == FileFormat::kLlama2c) {
    return invalid_argument(
        "a llama2.c checkpoint has no tokenizer inside: pass its tokenizer file (e.g. "
        "tokenizer.bin)");
  } else {
    auto t = make_tokenizer(model.file().metadata);
    if (!t.is_ok()) return t.status().with_context("loading the model's own tokenizer");
    tok = std::move(t).value();
  }
  if (tok->n_vocab() != n_vocab) {
    return invalid_argument(fmt::format("the tokenizer has {} tokens but the model expects {}",
                                        tok->n_vocab(), n_vocab));
  }
  return tok;
}

}  // namespace tessera::model
