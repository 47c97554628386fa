// The weights of the shared decoder (decoder.h) as read from a model file: every tensor the
// config and traits call for, validated (presence, dtype, shape), matrices still in the file's
// row layout and pointing into its mapping. The CPU model (decoder.cpp) repacks them into its
// image; the device model (device_decoder.cpp) uploads them. One reading of the file's names
// and shapes for both.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/kernels/ops.h"
#include "tessera/model/arch_traits.h"
#include "tessera/model/batch.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/model_config.h"

namespace tessera::model {

using kernels::MatrixRef;

struct LayerWeights {
  std::vector<float> attn_norm;  // [D]
  MatrixRef wq;                  // [Q, D]
  MatrixRef wk;                  // [KV, D]
  MatrixRef wv;                  // [KV, D]
  MatrixRef wo;                  // [D, Q]
  std::vector<float> ffn_norm;   // [D]
  MatrixRef w_gate;              // [F, D]
  MatrixRef w_up;                // [F, D]
  MatrixRef w_down;              // [D, F]
  // Per-family extras (ArchTraits); empty when the family has none.
  std::vector<float> bq, bk, bv;      // [Q], [KV], [KV]
  std::vector<float> q_norm, k_norm;  // [H]
  std::vector<float> attn_post_norm, ffn_post_norm;  // [D]
  int64_t window = 0;                 // sliding window (0: attends to every position)
  int64_t rope_set = 0;               // which of inv_freqs_ this layer's RoPE uses
};

struct DecoderWeights {
  MatrixRef token_embd;  // [V, D]
  MatrixRef output;      // [V, D] (token_embd when tied)
  std::vector<float> output_norm;
  std::vector<std::vector<float>> inv_freqs;  // [sets][H/2]: one per distinct layer RoPE
  std::vector<LayerWeights> layers;
  // Per layer, the seven matrices' GGUF names in LayerWeights order ("" for the parts of a
  // fused tensor after its first); then the output's name.
  std::vector<std::string> matrix_names;
  std::string output_name;
};

// Reads every tensor `config` and `traits` call for from `file` and sets config.tied_output.
// Errors: kNotFound (missing tensor), kCorruptData (shape, non-positive RoPE factor),
// kUnsupported (dtype), each naming the tensor.
Result<DecoderWeights> load_decoder_weights(const ModelFile& file, ModelConfig& config,
                                            const ArchTraits& traits);

// Checks a batch against the model and cache before anything runs: equal array lengths, token
// ids in the vocabulary, slots and positions inside the cache, a cache built for this model, and
// an output of at least n_logits() * row_floats floats. Adapter ids are the model's to check.
Status check_batch(const Batch& batch, const KvCache& kv, const ModelConfig& config,
                   size_t n_out_floats, int64_t row_floats);

}  // namespace tessera::model
