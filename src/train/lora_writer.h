// Trained LoRA adapters (lora_layout.h) written in the two formats model/lora_adapter.h reads,
// so `tessera serve --lora`, `generate --lora`, `lora merge` and other tools load them:
//  - PEFT: a directory with adapter_config.json (peft_type LORA, r, lora_alpha, target_modules,
//    base_model_name_or_path, ...) and adapter_model.safetensors holding F32
//    base_model.model.model.layers.N.<module>.lora_{A,B}.weight, A [r, in], B [out, r]. The rows
//    of q_proj's and k_proj's B are put back into Hugging Face's half-split RoPE order (the
//    inverse of the permutation the loader, like llama.cpp's converter, applies), so loading the
//    directory gives back exactly the matrices trained here.
//  - GGUF LoRA (llama.cpp's layout): general.type adapter, adapter.type lora, adapter.lora.alpha,
//    tensors <base tensor>.lora_a (ne {in, r}) and .lora_b (ne {r, out}), F32, in the base's row
//    order as trained.
// Both write through temporary files renamed into place. Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>

#include "tessera/base/status.h"
#include "tessera/train/llama_trainer.h"
#include "tessera/train/lora_layout.h"

namespace tessera::train {

// Preconditions of both: `layout` was made for `shape`; params has layout.n_params elements
// (else kInvalidArgument).
// Writes the PEFT directory `dir` (created if missing). `base_model` goes into
// base_model_name_or_path. Errors: kInvalidArgument, kIoError.
Status write_peft_adapter(const std::string& dir, const LlamaShape& shape,
                          const LoraLayout& layout, std::span<const float> params,
                          const std::string& base_model);

// Writes the GGUF LoRA `path` for a base of architecture "llama". Errors: kInvalidArgument,
// kIoError.
Status write_gguf_lora(const std::string& path, const LlamaShape& shape, const LoraLayout& layout,
                       std::span<const float> params, const std::string& name);

}  // namespace tessera::train
