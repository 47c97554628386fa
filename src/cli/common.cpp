#include "common.h"

#include <fmt/format.h>

#include <cstdio>

#include "tessera/model/architecture.h"
#include "tessera/model/format/model_file.h"

namespace tessera::cli {

int fail(const Status& status) { return fail(status.message()); }

int fail(const std::string& message) {
  std::fprintf(stderr, "tessera: error: %s\n", message.c_str());
  return 1;
}

Result<LoadedModel> load_model_and_tokenizer(const std::string& model_path,
                                             const std::string& tokenizer_path) {
  LoadedModel out;
  TS_ASSIGN_OR_RETURN(out.model, model::load_model(model_path));
  const int32_t n_vocab = static_cast<int32_t>(out.model->config().n_vocab);
  if (!tokenizer_path.empty()) {
    auto f = model::open_model_file(tokenizer_path);
    if (f.is_ok() && f->format == model::FileFormat::kGguf) {
      auto t = model::make_tokenizer(f->metadata);
      if (!t.is_ok()) return t.status().with_context("loading tokenizer " + tokenizer_path);
      out.tokenizer = std::move(t).value();
    } else {
      auto t = model::load_llama2c_tokenizer(tokenizer_path, n_vocab);
      if (!t.is_ok()) return t.status().with_context("loading tokenizer " + tokenizer_path);
      out.tokenizer = std::move(t).value();
    }
  } else if (out.model->file().format == model::FileFormat::kLlama2c) {
    return invalid_argument(fmt::format(
        "{} is a llama2.c checkpoint, which has no tokenizer inside: pass --tokenizer "
        "PATH (e.g. tokenizer.bin)",
        model_path));
  } else {
    auto t = model::make_tokenizer(out.model->file().metadata);
    if (!t.is_ok()) return t.status().with_context("loading tokenizer from " + model_path);
    out.tokenizer = std::move(t).value();
  }
  if (out.tokenizer->n_vocab() != n_vocab) {
    return invalid_argument(fmt::format("the tokenizer has {} tokens but the model expects {}",
                                        out.tokenizer->n_vocab(), n_vocab));
  }
  return out;
}

}  // namespace tessera::cli
