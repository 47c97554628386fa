// config.json of a Hugging Face transformers checkpoint: the hyperparameters of a decoder-only
// model as the transformers library writes them (LlamaConfig, MistralConfig, Qwen2Config,
// Qwen3Config). Only the keys those families use are read; others are ignored. A key that is
// read must have the right JSON type and a plausible value (sizes in range, so that products of
// them cannot overflow), or parsing fails naming it.
// Thread-safety: pure functions; the result is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::model {

// Largest config.json / index / tokenizer_config.json read (bytes); tokenizer.json may be larger.
constexpr uint64_t kMaxHfJsonBytes = 16u << 20;

struct HfRopeScaling {
  std::string type;  // "linear", "llama3", ... (rope_type, or the older "type")
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_context = 8192;  // original_max_position_embeddings
};

struct HfConfig {
  std::string architecture;  // architectures[0], e.g. "LlamaForCausalLM"
  std::string model_type;    // "llama", "mistral", "qwen2", "qwen3"
  std::string hidden_act = "silu";
  int64_t hidden_size = 0;
  int64_t n_layers = 0;            // num_hidden_layers
  int64_t n_heads = 0;             // num_attention_heads
  int64_t n_kv_heads = 0;          // num_key_value_heads (default: n_heads)
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t head_dim = 0;            // 0: hidden_size / n_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<HfRopeScaling> rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;
  int64_t sliding_window = 0;      // 0: none (null or absent)
  bool use_sliding_window = true;  // Qwen's switch; other families have none (true)
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // eos_token_id: one id or a list
  std::optional<int64_t> pad_token_id;
  std::string torch_dtype;         // "float32", "float16", "bfloat16" or ""

  int64_t effective_head_dim() const { return head_dim > 0 ? head_dim : hidden_size / n_heads; }
};

// Parses config.json text. Errors: kCorruptData for invalid JSON, a non-object, a missing
// required key (architectures, hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size, vocab_size) or a key of the wrong type or out of range; each names the key.
Result<HfConfig> parse_hf_config(std::string_view json_text);

// Reads a whole small JSON-ish file (at most `max_bytes`). Errors: kNotFound (no such file),
// kCorruptData (larger than max_bytes), kIoError.
Result<std::string> read_small_file(const std::string& path, uint64_t max_bytes = kMaxHfJsonBytes);

}  // namespace tessera::model
