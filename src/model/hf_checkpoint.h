// Hugging Face checkpoint directories (config.json, model.safetensors or shards listed by
// model.safetensors.index.json, tokenizer.json and tokenizer_config.json) presented as the
// ModelFile a GGUF of the same model gives: GGUF tensor names, GGML layouts (Q/K rows permuted
// for normal-RoPE families as llama.cpp's converter does, 1-D tensors in f32), `<arch>.*`
// hyperparameter keys and tokenizer.ggml.* keys built from tokenizer.json. The rest of Tessera
// (architectures, tokenizers, quantize, convert) then runs on it unchanged.
//
// Families: LlamaForCausalLM -> llama; MistralForCausalLM -> llama without a sliding window (as
// llama.cpp converts it) and Tessera's mistral with one; Qwen2ForCausalLM -> qwen2 (Q/K/V
// biases); Qwen3ForCausalLM -> qwen3 (per-head Q/K norms). Other classes, activations, biases,
// Qwen's use_sliding_window and rope_scaling types other than linear and llama3 are refused by
// name. Every tensor must be one the family has, with the shape config.json implies; every
// tensor the family needs must be there.
// Matrices keep the checkpoint's dtype (F32, F16, BF16) and point into the mapped shards, except
// Q/K (permuted copies); 1-D tensors are converted to f32 copies.
// Thread-safety: pure functions; results are immutable.
#pragma once

#include <string>

#include "tessera/base/status.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

// Errors: kNotFound (no config.json, no weights, a missing shard), kCorruptData (malformed
// files, shapes that do not match config.json, a missing or unexpected tensor), kUnsupported
// (an architecture, feature, dtype or tokenizer Tessera does not read), each naming the file,
// key or tensor.
Result<ModelFile> open_hf_checkpoint(const std::string& dir);

// A directory through open_hf_checkpoint, anything else through open_model_file.
Result<ModelFile> open_model_path(const std::string& path);

}  // namespace tessera::model
