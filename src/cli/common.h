// Helpers shared by the CLI subcommands: error printing and loading a model with its tokenizer.
#pragma once

#include <memory>
#include <string>

#include "tessera/base/status.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::cli {

// Prints "tessera: error: <status message>" to stderr and returns exit code 1.
int fail(const Status& status);
int fail(const std::string& message);

struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<model::Tokenizer> tokenizer;
};

// Loads the model at `model_path` and its tokenizer: from `tokenizer_path` when non-empty
// (a llama2.c tokenizer .bin or a GGUF file with tokenizer metadata), else from the model's
// own GGUF metadata. A llama2.c checkpoint without --tokenizer gets a clear error.
Result<LoadedModel> load_model_and_tokenizer(const std::string& model_path,
                                             const std::string& tokenizer_path);

}  // namespace tessera::cli
