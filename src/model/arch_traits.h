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
#include "tessera/model/model_config.h"

namespace tessera::model {

// How RoPE pairs a head's values: adjacent (x[2i], x[2i+1]) as GGML's "normal" mode (Llama,
// Mistral), or halves (x[i], x[i + H/2]) as its "NeoX" mode (Qwen2, Qwen3). llama.cpp fixes the
// mode per architecture (llama_model_rope_type), not per file.
enum class RopeStyle { kNormal, kNeox };

// The FFN's gate activation: act(gate) * up. SwiGLU (SiLU) for most families; GeGLU with GELU's
// tanh approximation for Gemma (llama.cpp's LLM_FFN_GELU with a parallel gate).
enum class FfnActivation { kSilu, kGeluTanh };

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
  // RoPE per layer (Gemma 3's local layers use another base than its global ones); empty: the
  // config's RoPE on every layer. A rope_freqs.weight tensor, if any, applies to every layer.
  std::vector<RopeConfig> layer_rope;

  // Gemma: the embedding row is multiplied by sqrt(D) before the first layer.
  bool scale_embedding = false;
  FfnActivation ffn_activation = FfnActivation::kSilu;
  // blk.N.post_attention_norm.weight and blk.N.post_ffw_norm.weight ([D]): RMSNorm of the
  // attention output and of the FFN output before each is added to the residual (Gemma 2/3).
  bool post_norms = false;
  // Scores are q · k * attn_scale; 0: 1 / sqrt(H).
  float attn_scale = 0.0f;
  // Attention scores and final logits soft-capped to cap * tanh(x / cap); 0: not capped.
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;

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

// The interleaved local/global layout of Gemma 2/3 as llama.cpp lays it out
// (llama_hparams::set_swa_pattern): with period n, layer l is local (window `window`) when
// l % n < n - 1, so the last layer of each period is global (0); period 0: every layer local.
// `<arch>.attention.sliding_window_pattern` overrides `default_period` when present as an
// integer. Errors: kCorruptData for a negative period; kUnsupported for the per-layer array form of the key.
Result<std::vector<int64_t>> interleaved_windows(const Metadata& metadata, const std::string& arch,
                                                 int64_t n_layers, int64_t window,
                                                 int64_t default_period);

}  // namespace tessera::model
