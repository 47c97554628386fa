// ArchTraits: what sets one decoder-only family apart from Llama, as data. The shared decoder
// (decoder.h) runs every family from its ModelConfig plus these traits; each family's file
// (llama.cpp, arch_qwen2.cpp, ...) reads its GGUF keys and fills them.
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"

namespace tessera::model {

// How RoPE pairs a head's values: adjacent (x[2i], x[2i+1]) as GGML's "normal" mode (Llama,
// Mistral), or halves (x[i], x[i + H/2]) as its "NeoX" mode (Qwen2, Qwen3). llama.cpp fixes the
// mode per architecture (llama_model_rope_type), not per file.
enum class RopeStyle { kNormal, kNeox };

struct ArchTraits {
  RopeStyle rope = RopeStyle::kNormal;
  // blk.N.attn_{q,k,v}.bias ([Q], [KV], [KV], f32-convertible), added after the projections.
  bool qkv_bias = false;
  // blk.N.attn_{q,k}_norm.weight ([H]): RMSNorm over each head of Q and K before RoPE (Qwen3).
  bool qk_norm = false;
  // blk.N.attn_qkv.weight ([Q + 2 KV, D]: Q, K, V rows in that order) instead of three matrices,
  // when the file has it (Phi-3); the three are row ranges of it.
  bool fused_qkv = false;
  // blk.N.ffn_up.weight holds gate and up ([2 F, D]: the gate's rows first) and there is no
  // ffn_gate (Phi-3).
  bool fused_gate_up = false;
  // Sliding-window attention per layer: a row at position p attends to positions
  // (p - window, p]; 0 attends to all. Empty: no layer has a window.
  std::vector<int64_t> layer_window;

  bool has_window() const {
    for (int64_t w : layer_window) {
      if (w > 0) return true;
    }
    return false;
  }
};

// `<arch>.attention.sliding_window` (llama.cpp's key name) as a window for every one of
// `n_layers` layers; empty when the key is absent. Errors: kCorruptData for a window < 1 or
// above 2^24.
Result<std::vector<int64_t>> read_sliding_window(const Metadata& metadata, const std::string& arch,
                                                 int64_t n_layers);

}  // namespace tessera::model
