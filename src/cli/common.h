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

// The whole file at `path` (a text to evaluate or calibrate on). Errors: kNotFound.
Result<std::string> read_text(const std::string& path);

// Chart.js (UMD) to inline in an HTML report: from `flag_path`, else $TESSERA_CHARTJS, else the
// npm cache scripts/fetch-chartjs.sh fills. Empty when none is readable; `*used` (optional) gets
// the path tried.
std::string load_chart_js(const std::string& flag_path, std::string* used = nullptr);

}  // namespace tessera::cli
