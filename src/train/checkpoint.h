// Trained llama parameters as a GGUF file that every Tessera command (and llama.cpp) loads: the
// llama.* hyperparameters, the tensors of llama_param_layout in F32, and optionally a tokenizer's
// metadata (tokenizer.* keys copied from another model file).
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"
#include "tessera/train/llama_trainer.h"

namespace tessera::train {

// Writes `params` (laid out by llama_param_layout(shape)) to `path` (a temporary file renamed
// into place). `tokenizer` may be null (a model without a vocabulary: load it with --tokenizer).
// Errors: kInvalidArgument (shape invalid, params of the wrong size), kIoError.
Status write_llama_gguf(const std::string& path, const LlamaShape& shape,
                        std::span<const float> params, const model::Metadata* tokenizer,
                        const std::string& name);

}  // namespace tessera::train
