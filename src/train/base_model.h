// A trained llama model read back as the frozen base of LoRA fine-tuning: its shape and every
// tensor of llama_param_layout dequantized to f32 (any tensor type Tessera reads: F32, F16,
// BF16, the Q*_0/Q*_K families...), from any model file Tessera opens (GGUF, llama2.c). Only
// what the trainer's graph computes is accepted: architecture llama, head width dim / heads,
// plain RoPE (no scaling, no rope_freqs), no biases or extra tensors; a tied output projection
// (no output.weight) is read as a copy of token_embd.
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"
#include "tessera/train/llama_trainer.h"

namespace tessera::train {

struct LlamaBase {
  LlamaShape shape;            // shape.context: the file's trained context
  std::vector<float> params;   // llama_param_layout(shape) order
  model::Metadata metadata;    // the file's (tokenizer.* included)
  int64_t n_dequantized = 0;   // tensors that were not F32 in the file
  bool tied_output = false;
};

// Errors: those of opening the file (kNotFound, kCorruptData...), kUnsupported naming what the
// trainer does not compute (another architecture, RoPE scaling, a bias, a tensor type without
// kernels), kInvalidArgument (a tensor missing or of another shape), kCorruptData (a non-finite
// weight).
Result<LlamaBase> load_llama_base(const std::string& path);

}  // namespace tessera::train
