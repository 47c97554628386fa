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
const Architecture& gemma2_architecture();
const Architecture& gemma3_architecture();

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
// Gemma 2: sqrt(D)-scaled embeddings, GeGLU FFN, post-attention and post-FFN norms, attention
// scores and final logits soft-capped (gemma2.attn_logit_softcapping, final_logit_softcapping),
// even layers local with gemma2.attention.sliding_window, NeoX RoPE, output tied to token_embd.
Result<std::unique_ptr<Model>> build_gemma2(std::shared_ptr<const ModelFile> file,
                                            const LoadOptions& options);
// Gemma 3 (text only): Gemma 2's block with per-head Q/K norms and no attention soft-cap; local
// layers (5 of each 6 when gemma3.attention.sliding_window is set) with their own RoPE base.
Result<std::unique_ptr<Model>> build_gemma3(std::shared_ptr<const ModelFile> file,
                                            const LoadOptions& options);
// The score scale llama.cpp gives Gemma 2/3 (c.architecture names which): 1/sqrt(head_dim),
// or 1/sqrt(dim / heads) for the 27B models.
float gemma_attention_scale(const ModelConfig& c);

}  // namespace tessera::model
