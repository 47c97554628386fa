#include "tessera/train/base_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "tessera/kernels/kernel_table.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/model_config.h"

namespace tessera::train {

Result<LlamaBase> load_llama_base(const std::string& path) {
  TS_ASSIGN_OR_RETURN(const model::ModelFile f, model::open_model_file(path));
  TS_ASSIGN_OR_RETURN(const std::string arch,
                      f.metadata.get_string_or("general.architecture", "llama"));
  if (arch != "llama") {
    return unsupported(fmt::format("{}: architecture '{}'; LoRA training runs the llama graph only",
                                   path, arch));
  }
  TS_ASSIGN_OR_RETURN(const model::ModelConfig c, model::read_model_config(f.metadata, arch));
  if (c.rope.scaling != model::RopeScaling::kNone || f.find_tensor("rope_freqs.weight") != nullptr) {
    return unsupported(fmt::format("{}: RoPE scaling (or rope_freqs) is not trained yet", path));
  }
  if (c.n_heads <= 0 || c.head_dim * c.n_heads != c.dim) {
    return unsupported(fmt::format("{}: head width {} x {} heads is not the width {}; the trainer "
                                   "needs head width = dim / heads", path, c.head_dim, c.n_heads, c.dim));
  }
  TS_ASSIGN_OR_RETURN(const int64_t rope_dims,
                      f.metadata.get_int_or("llama.rope.dimension_count", c.head_dim));
  if (rope_dims != c.head_dim) {
    return unsupported(fmt::format("{}: RoPE turns {} of {} head dimensions (partial RoPE is not "
                                   "trained)", path, rope_dims, c.head_dim));
  }
  LlamaBase b;
  b.shape.vocab = c.n_vocab;
  b.shape.dim = c.dim;
  b.shape.layers = c.n_layers;
  b.shape.heads = c.n_heads;
  b.shape.kv_heads = c.n_kv_heads;
  b.shape.ffn = c.ffn_dim;
  b.shape.context = std::max<int64_t>(1, c.context_length);
  b.shape.rope_base = c.rope.freq_base;
  b.shape.rms_eps = static_cast<double>(c.rms_eps);
  if (Status s = validate(b.shape); !s.is_ok()) return s.with_context(path);
  int64_t total = 0;
  const std::vector<ParamTensor> layout = llama_param_layout(b.shape, &total);
  std::set<std::string> known;
  for (const ParamTensor& t : layout) known.insert(t.name);
  for (const model::TensorInfo& t : f.tensors) {
    if (!known.contains(t.name)) {
      return unsupported(fmt::format("{}: tensor '{}' is not part of the llama graph the trainer "
                                     "computes (biases and extra tensors are not trained)", path, t.name));
    }
  }
  b.params.resize(static_cast<size_t>(total));
  for (const ParamTensor& t : layout) {
    const model::TensorInfo* info = f.find_tensor(t.name);
    if (info == nullptr && t.name == "output.weight") {
      info = f.find_tensor("token_embd.weight");
      b.tied_output = true;
    }
    if (info == nullptr || info->n_elements() != t.size || info->ne[0] != t.shape.back()) {
      return invalid_argument(fmt::format("{}: tensor {} is {}; this llama shape needs {} values in "
                                          "rows of {}", path, t.name,
                                          info == nullptr ? "missing" : info->shape_string(),
                                          t.size, t.shape.back()));
    }
    if (!kernels::dtype_info(info->dtype).supported) {
      return unsupported(fmt::format("{}: tensor {} has type {}, which Tessera cannot read", path,
                                     t.name, kernels::dtype_name(info->dtype)));
    }
    float* out = b.params.data() + t.offset;
    kernels::kernels_for(kernels::scalar_kernel_table(), info->dtype).to_float(info->data, out, t.size);
    if (!std::all_of(out, out + t.size, [](float v) { return std::isfinite(v); })) {
      return corrupt_data(fmt::format("{}: tensor {} holds a non-finite value", path, t.name));
    }
    if (info->dtype != kernels::DType::kF32) ++b.n_dequantized;
  }
  b.metadata = f.metadata;
  return b;
}

}  // namespace tessera::train
