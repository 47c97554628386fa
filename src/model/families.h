// The builders of the families beside Llama (llama.h), one file each (arch_<name>.cpp): each
// reads `<name>.*` hyperparameters and its traits from the GGUF metadata, as llama.cpp's
// converters write them, and runs the shared decoder (decoder.h). Listed in architecture.cpp.
// Thread-safety: pure functions.
#pragma once

#include <memory>

#include "tessera/model/architecture.h"

namespace tessera::model {

// The registry entries (architecture.cpp lists them).
const Architecture& llama_architecture();
const Architecture& qwen2_architecture();
const Architecture& qwen3_architecture();
const Architecture& mistral_architecture();
const Architecture& phi3_architecture();

// Qwen2 / Qwen2.5: Llama's block with biases on Q, K and V, and NeoX RoPE.
Result<std::unique_ptr<Model>> build_qwen2(std::shared_ptr<const ModelFile> file,
                                           const LoadOptions& options);
// Qwen3 (dense): no biases; RMSNorm over each head of Q and K before RoPE; NeoX RoPE; the head
// size from qwen3.attention.key_length (it need not be dim / heads).
Result<std::unique_ptr<Model>> build_qwen3(std::shared_ptr<const ModelFile> file,
                                           const LoadOptions& options);
// Mistral under its own name: Llama's block, with mistral.attention.sliding_window honoured on
// every layer when present. (llama.cpp itself converts Mistral 7B to "llama" and ignores the
// window; such files load through build_llama.)
Result<std::unique_ptr<Model>> build_mistral(std::shared_ptr<const ModelFile> file,
                                             const LoadOptions& options);
// Phi-3 (dense): fused QKV (when the file has attn_qkv) and fused gate/up, NeoX RoPE. LongRoPE
// files (rope_factors_long/short) are refused; the sliding window is ignored, as llama.cpp does.
// LoRA adapters name attn_q/k/v and ffn_gate/up, which a fused file lacks: refused by name.
Result<std::unique_ptr<Model>> build_phi3(std::shared_ptr<const ModelFile> file,
                                          const LoadOptions& options);

}  // namespace tessera::model
