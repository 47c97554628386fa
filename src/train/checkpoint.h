// Trained llama parameters as a GGUF file that every Tessera command (and llama.cpp) loads: the
// llama.* hyperparameters, the tensors of llama_param_layout in F32, and optionally a tokenizer's
// metadata (tokenizer.* keys copied from another model file). Beside it, for resuming, the
// training state (TrainState) as a second GGUF file, "<model>.state":
//   tensors  adamw.m, adamw.v       F32 [n_params], the moments in the parameters' flat order
//   keys     tessera.train.step     u64, optimizer steps taken
//            tessera.train.rng      string, the data-order std::mt19937_64 in its text form
//            tessera.train.<option> the run's options that a resumed run must repeat (shape,
//                                   batch, accum, steps, schedule, AdamW, clip, seed) as i64/f64
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"
#include "tessera/train/llama_trainer.h"
#include "tessera/train/pretrain.h"

namespace tessera::train {

// Writes `params` (laid out by llama_param_layout(shape)) to `path` (a temporary file renamed
// into place). `tokenizer` may be null (a model without a vocabulary: load it with --tokenizer).
// Errors: kInvalidArgument (shape invalid, params of the wrong size), kIoError.
Status write_llama_gguf(const std::string& path, const LlamaShape& shape,
                        std::span<const float> params, const model::Metadata* tokenizer,
                        const std::string& name);

// The parameters of a GGUF written by write_llama_gguf, flat in llama_param_layout(shape) order.
// Errors: kNotFound/kIoError (the file), kInvalidArgument (a tensor missing, of another shape or
// not F32: the file is not a checkpoint of `shape`).
Result<std::vector<float>> read_llama_gguf_params(const std::string& path, const LlamaShape& shape);

// Where the training state of the checkpoint `model_path` lives: model_path + ".state".
std::string train_state_path(const std::string& model_path);
// Writes `state` with `options` (the run it belongs to). Errors: kIoError.
Status write_train_state(const std::string& path, const TrainState& state,
                         const PretrainOptions& options);
// Reads a state written by write_train_state for a run with `options`. Errors: kIoError/kNotFound
// (the file), kInvalidArgument naming the first option that differs from the saved run's (a
// resumed run must repeat them, or it would not continue the same run) or a malformed state.
Result<TrainState> read_train_state(const std::string& path, const PretrainOptions& options);

}  // namespace tessera::train
