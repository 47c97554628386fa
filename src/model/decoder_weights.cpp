#include "tessera/model/decoder_weights.h"

#include <fmt/format.h>

#include <cmath>

namespace tessera::model {
namespace {

// Rows [first, first + n) of `m`, itself a matrix in the file's row layout.
MatrixRef row_range(const MatrixRef& m, int64_t first, int64_t n) {
  MatrixRef r = m;
  r.data = static_cast<const std::byte*>(m.data) + static_cast<size_t>(first) * m.row_bytes;
  r.n_rows = n;
  return r;
}

Result<MatrixRef> read_matrix(const ModelFile& file, const std::string& name, int64_t rows,
                              int64_t cols) {
  const TensorInfo* t = file.find_tensor(name);
  if (t == nullptr) return not_found(fmt::format("tensor '{}' is missing", name));
  if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows) {
    return corrupt_data(fmt::format("tensor '{}' has shape {}, expected [{}, {}]", name,
                                    t->shape_string(), cols, rows));
  }
  if (!kernels::dtype_info(t->dtype).supported) {
    return unsupported(fmt::format("tensor '{}' has unsupported type {}", name,
                                   kernels::dtype_name(t->dtype)));
  }
  return MatrixRef{t->dtype, t->data, rows, cols, kernels::dtype_row_bytes(t->dtype, cols)};
}

Result<std::vector<float>> read_vector(const ModelFile& file, const std::string& name, int64_t n) {
  const TensorInfo* t = file.find_tensor(name);
  if (t == nullptr) return not_found(fmt::format("tensor '{}' is missing", name));
  if (t->n_elements() != n || t->n_dims != 1) {
    return corrupt_data(fmt::format("tensor '{}' has shape {}, expected [{}]", name,
                                    t->shape_string(), n));
  }
  if (!kernels::dtype_info(t->dtype).supported) {
    return unsupported(fmt::format("tensor '{}' has unsupported type {}", name,
                                   kernels::dtype_name(t->dtype)));
  }
  std::vector<float> out(static_cast<size_t>(n));
  kernels::kernels_for(t->dtype).to_float(t->data, out.data(), n);
  return out;
}

}  // namespace

Result<DecoderWeights> load_decoder_weights(const ModelFile& file, ModelConfig& config,
                                            const ArchTraits& traits) {
  const ModelConfig& c = config;
  DecoderWeights w;
  TS_ASSIGN_OR_RETURN(w.token_embd, read_matrix(file, "token_embd.weight", c.n_vocab, c.dim));
  TS_ASSIGN_OR_RETURN(w.output_norm, read_vector(file, "output_norm.weight", c.dim));
  if (file.find_tensor("output.weight") != nullptr) {
    TS_ASSIGN_OR_RETURN(w.output, read_matrix(file, "output.weight", c.n_vocab, c.dim));
    config.tied_output = false;
  } else {
    w.output = w.token_embd;
    config.tied_output = true;
  }
  std::vector<float> freq_factors;
  const bool has_factors = file.find_tensor("rope_freqs.weight") != nullptr;
  if (has_factors) {
    TS_ASSIGN_OR_RETURN(freq_factors, read_vector(file, "rope_freqs.weight", c.head_dim / 2));
    for (float f : freq_factors) {
      if (!(f > 0.0f) || !std::isfinite(f)) {
        return corrupt_data("tensor 'rope_freqs.weight' holds a non-positive factor");
      }
    }
  }
  // One table of inverse frequencies per distinct RoPE among the layers (most families: one).
  std::vector<const RopeConfig*> sets;
  auto rope_set = [&](const RopeConfig& r) {
    for (size_t i = 0; i < sets.size(); ++i) {
      const RopeConfig& s = *sets[i];
      if (s.freq_base == r.freq_base && s.scaling == r.scaling && s.factor == r.factor &&
          s.low_freq_factor == r.low_freq_factor && s.high_freq_factor == r.high_freq_factor &&
          s.original_context == r.original_context) {
        return static_cast<int64_t>(i);
      }
    }
    sets.push_back(&r);
    w.inv_freqs.push_back(rope_inv_freq(r, c.head_dim, has_factors ? &freq_factors : nullptr));
    return static_cast<int64_t>(sets.size()) - 1;
  };
  if (traits.layer_rope.empty()) rope_set(c.rope);

  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    TS_ASSIGN_OR_RETURN(l.attn_norm, read_vector(file, p + "attn_norm.weight", c.dim));
    // Observer names of the seven matrices; a fused tensor is reported once, under its own name.
    std::string names[7] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                            "ffn_down"};
    if (traits.fused_qkv && file.find_tensor(p + "attn_qkv.weight") != nullptr) {
      TS_ASSIGN_OR_RETURN(MatrixRef qkv, read_matrix(file, p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), c.dim));
      l.wq = row_range(qkv, 0, c.q_dim());
      l.wk = row_range(qkv, c.q_dim(), c.kv_dim());
      l.wv = row_range(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
      names[0] = "attn_qkv";
      names[1] = names[2] = "";
    } else {
      TS_ASSIGN_OR_RETURN(l.wq, read_matrix(file, p + "attn_q.weight", c.q_dim(), c.dim));
      TS_ASSIGN_OR_RETURN(l.wk, read_matrix(file, p + "attn_k.weight", c.kv_dim(), c.dim));
      TS_ASSIGN_OR_RETURN(l.wv, read_matrix(file, p + "attn_v.weight", c.kv_dim(), c.dim));
    }
    TS_ASSIGN_OR_RETURN(l.wo, read_matrix(file, p + "attn_output.weight", c.dim, c.q_dim()));
    TS_ASSIGN_OR_RETURN(l.ffn_norm, read_vector(file, p + "ffn_norm.weight", c.dim));
    if (traits.fused_gate_up) {
      TS_ASSIGN_OR_RETURN(MatrixRef gate_up, read_matrix(file, p + "ffn_up.weight", 2 * c.ffn_dim, c.dim));
      l.w_gate = row_range(gate_up, 0, c.ffn_dim);
      l.w_up = row_range(gate_up, c.ffn_dim, c.ffn_dim);
      names[4] = "ffn_up";
      names[5] = "";
    } else {
      TS_ASSIGN_OR_RETURN(l.w_gate, read_matrix(file, p + "ffn_gate.weight", c.ffn_dim, c.dim));
      TS_ASSIGN_OR_RETURN(l.w_up, read_matrix(file, p + "ffn_up.weight", c.ffn_dim, c.dim));
    }
    TS_ASSIGN_OR_RETURN(l.w_down, read_matrix(file, p + "ffn_down.weight", c.dim, c.ffn_dim));
    if (traits.qkv_bias) {
      TS_ASSIGN_OR_RETURN(l.bq, read_vector(file, p + "attn_q.bias", c.q_dim()));
      TS_ASSIGN_OR_RETURN(l.bk, read_vector(file, p + "attn_k.bias", c.kv_dim()));
      TS_ASSIGN_OR_RETURN(l.bv, read_vector(file, p + "attn_v.bias", c.kv_dim()));
    }
    if (traits.qk_norm) {
      TS_ASSIGN_OR_RETURN(l.q_norm, read_vector(file, p + "attn_q_norm.weight", c.head_dim));
      TS_ASSIGN_OR_RETURN(l.k_norm, read_vector(file, p + "attn_k_norm.weight", c.head_dim));
    }
    if (traits.post_norms) {
      TS_ASSIGN_OR_RETURN(l.attn_post_norm, read_vector(file, p + "post_attention_norm.weight", c.dim));
      TS_ASSIGN_OR_RETURN(l.ffn_post_norm, read_vector(file, p + "post_ffw_norm.weight", c.dim));
    }
    if (!traits.layer_window.empty()) l.window = traits.layer_window[static_cast<size_t>(i)];
    if (!traits.layer_rope.empty()) l.rope_set = rope_set(traits.layer_rope[static_cast<size_t>(i)]);
    for (const std::string& m : names) w.matrix_names.push_back(m.empty() ? m : p + m + ".weight");
  }
  w.output_name = config.tied_output ? "token_embd.weight" : "output.weight";
  return w;
}


Status check_batch(const Batch& b, const KvCache& kv, const ModelConfig& config, size_t n_out_floats,
                   int64_t row_floats) {
  const size_t n = b.tokens.size();
  if (b.positions.size() != n || b.seq_ids.size() != n || b.want_logits.size() != n) {
    return invalid_argument("batch arrays have different lengths");
  }
  if (n == 0) return invalid_argument("empty batch");
  if (kv.kv_dim() != config.kv_dim() || kv.n_layers() != config.n_layers) {
    return invalid_argument("KV cache built for another model");
  }
  for (size_t i = 0; i < n; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= config.n_vocab) {
      return invalid_argument(fmt::format("token id {} is outside the vocabulary [0, {})",
                                          b.tokens[i], config.n_vocab));
    }
    if (b.seq_ids[i] < 0 || b.seq_ids[i] >= kv.n_slots()) {
      return invalid_argument(fmt::format("sequence slot {} is outside [0, {})", b.seq_ids[i],
                                          kv.n_slots()));
    }
    if (b.positions[i] < 0 || b.positions[i] >= kv.capacity(b.seq_ids[i])) {
      return out_of_range(fmt::format("position {} is outside the {} positions of slot {}",
                                      b.positions[i], kv.capacity(b.seq_ids[i]), b.seq_ids[i]));
    }
  }
  if (!b.adapter_ids.empty() && b.adapter_ids.size() != n) {
    return invalid_argument("batch arrays have different lengths");
  }
  if (n_out_floats < static_cast<size_t>(b.n_logits() * row_floats)) {
    return invalid_argument(row_floats == config.n_vocab ? "logits buffer is too small"
                                                          : "hidden-state buffer is too small");
  }
  return Status::ok();
}

}  // namespace tessera::model
