// Hugging Face <-> GGUF naming and layout for the Llama family's decoder blocks: the one place
// that knows which HF module becomes which GGUF tensor, and how Llama-family GGUF converters
// reorder the rows of Q and K. Used by the checkpoint reader (hf_checkpoint.h) and the PEFT LoRA
// reader (lora_adapter.h), so a full checkpoint and an adapter trained on it land on the same rows.
//
// RoPE row order: HF checkpoints rotate a head's halves (x[i], x[i + H/2]); GGML's "normal" RoPE
// rotates adjacent pairs (x[2i], x[2i + 1]). Converters for normal-RoPE families (llama,
// mistral) therefore permute each head's rows of the Q and K projections: GGUF row 2i + j of a
// head is HF row j * H/2 + i. NeoX-RoPE families (qwen2, qwen3) keep HF's order.
// Thread-safety: pure functions and constant tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tessera/base/status.h"

namespace tessera::model {

// The seven projection matrices of a block (the ones LoRA adapters target): the HF module path
// inside "model.layers.N." ("self_attn.q_proj", "mlp.down_proj", ...) and the GGUF name within
// the block ("attn_q", "ffn_down", ...).
struct HfProjection {
  std::string_view hf;
  std::string_view gguf;
};
std::span<const HfProjection> hf_projections();
// The GGUF block name of an HF projection module, or nullopt.
std::optional<std::string_view> hf_projection_to_gguf(std::string_view hf_module);

// The GGUF tensor name of a full HF checkpoint tensor of a Llama-family model
// ("model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight"; also embeddings, norms,
// lm_head, Q/K/V biases and Qwen3's per-head Q/K norms), or nullopt for a name outside the
// family's layout. Layer numbers are copied digit for digit (at most 6 digits).
std::optional<std::string> hf_tensor_to_gguf(std::string_view hf_name);

// Writes `in`'s rows, n_rows of row_bytes each, to `out` in GGML's adjacent-pair RoPE order
// (see above), head by head. Errors: kInvalidArgument when n_rows does not split into n_heads
// heads of an even size, or the spans do not hold n_rows rows.
Status permute_rope_rows(std::span<const std::byte> in, std::span<std::byte> out, int64_t n_rows,
                         size_t row_bytes, int64_t n_heads);

}  // namespace tessera::model
