// ModelConfig: the hyperparameters an architecture reads from a model file's metadata.
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"

namespace tessera::model {

enum class RopeScaling { kNone, kLinear, kLlama3 };

struct RopeConfig {
  double freq_base = 10000.0;
  RopeScaling scaling = RopeScaling::kNone;
  double factor = 1.0;              // linear and llama3
  double low_freq_factor = 1.0;     // llama3
  double high_freq_factor = 4.0;    // llama3
  int64_t original_context = 8192;  // llama3
};

struct ModelConfig {
  std::string architecture;  // "llama"
  std::string name;          // general.name, if any
  int64_t n_vocab = 0;
  int64_t dim = 0;  // embedding length
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;  // dim / n_heads unless the file says otherwise
  int64_t ffn_dim = 0;
  int64_t context_length = 0;  // trained context
  float rms_eps = 1e-5f;
  RopeConfig rope;
  bool tied_output = false;  // output projection shares token_embd

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Reads `<arch>.*` hyperparameters from metadata and checks they are consistent (positive,
// heads divide evenly, within sane limits). `n_vocab` comes from `<arch>.vocab_size` or the
// length of tokenizer.ggml.tokens. Errors: kNotFound / kCorruptData naming the key.
Result<ModelConfig> read_model_config(const Metadata& metadata, const std::string& arch);

// Per-pair inverse frequencies theta_i = base^(-2i/head_dim) for i < head_dim/2, with linear or
// llama3 scaling applied, then divided by `freq_factors` when given (GGUF rope_freqs tensor).
std::vector<float> rope_inv_freq(const RopeConfig& rope, int64_t head_dim,
                                 const std::vector<float>* freq_factors);

// The rope_freqs.weight tensor that Llama 3 converters write for `scaled` (llama3 scaling):
// per pair, the unscaled inverse frequency over the scaled one, so that dividing by it applies
// the scaling to a model whose metadata names none.
std::vector<float> rope_freq_factors(const RopeConfig& scaled, int64_t head_dim);

}  // namespace tessera::model
