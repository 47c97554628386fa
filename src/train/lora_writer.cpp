#include "tessera/train/lora_writer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/safetensors.h"

namespace tessera::train {
namespace {

namespace fs = std::filesystem;

Status check(const LlamaShape& shape, const LoraLayout& layout, std::span<const float> params) {
  TS_RETURN_IF_ERROR(validate(shape));
  if (static_cast<int64_t>(params.size()) != layout.n_params ||
      static_cast<int64_t>(layout.index.size()) != shape.layers * kLoraTargets) {
    return invalid_argument(fmt::format("LoRA writer: {} adapter values for a layout of {} over {} "
                                        "layers", params.size(), layout.n_params, shape.layers));
  }
  return Status::ok();
}

std::span<const std::byte> bytes_of(const float* p, int64_t n) {
  return {reinterpret_cast<const std::byte*>(p), static_cast<size_t>(n) * sizeof(float)};
}

// B [out, r] with its rows from GGML's adjacent-pair RoPE order back to the half-split one of a
// Hugging Face checkpoint: within each head of width hd, GGML row 2i + j is HF row j * hd/2 + i.
std::vector<float> unpermute_rope_rows(const float* b, int64_t n_out, int64_t rank, int64_t heads) {
  const int64_t hd = n_out / heads, half = hd / 2;
  std::vector<float> out(static_cast<size_t>(n_out * rank));
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t ggml = h * hd + 2 * i + j, hf = h * hd + j * half + i;
        std::copy_n(b + ggml * rank, rank, out.begin() + hf * rank);
      }
    }
  }
  return out;
}

}  // namespace

Status write_peft_adapter(const std::string& dir, const LlamaShape& shape,
                          const LoraLayout& layout, std::span<const float> params,
                          const std::string& base_model) {
  TS_RETURN_IF_ERROR(check(shape, layout, params));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error(fmt::format("cannot create directory '{}': {}", dir, ec.message()));
  const int64_t r = layout.config.rank;
  model::SafetensorsWriter w;
  for (const LoraTensor& t : layout.tensors) {
    const std::string stem = fmt::format("base_model.model.model.layers.{}.{}", t.layer,
                                         lora_peft_module(t.which));
    TS_RETURN_IF_ERROR(w.add_tensor(stem + ".lora_A.weight", kernels::DType::kF32, {r, t.n_in},
                                    bytes_of(params.data() + t.a_offset, r * t.n_in)));
    const float* b = params.data() + t.b_offset;
    std::vector<float> hf;
    if (t.which == LoraTarget::kQ || t.which == LoraTarget::kK) {
      hf = unpermute_rope_rows(b, t.n_out, r, t.which == LoraTarget::kQ ? shape.heads : shape.kv_heads);
      b = hf.data();
    }
    TS_RETURN_IF_ERROR(w.add_tensor(stem + ".lora_B.weight", kernels::DType::kF32, {t.n_out, r},
                                    bytes_of(b, t.n_out * r)));
  }
  w.add_metadata("format", "pt");
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  for (LoraTarget t : layout.config.targets) {
    const std::string_view peft = lora_peft_module(t);
    modules.push_back(std::string(peft.substr(peft.find('.') + 1)));
  }
  const nlohmann::ordered_json config = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", base_model},
      {"r", r},
      {"lora_alpha", layout.config.alpha},
      {"lora_dropout", 0.0},
      {"target_modules", modules},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"use_rslora", false},
      {"use_dora", false},
      {"init_lora_weights", true},
      {"inference_mode", true},
      {"modules_to_save", nullptr},
      {"layers_to_transform", nullptr},
      {"rank_pattern", nlohmann::ordered_json::object()},
      {"alpha_pattern", nlohmann::ordered_json::object()},
      {"revision", nullptr}};
  TS_RETURN_IF_ERROR(w.write((fs::path(dir) / "adapter_model.safetensors").string()));
  const fs::path cfg = fs::path(dir) / "adapter_config.json", tmp = cfg.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << config.dump(2) << '\n';
    if (!f.good()) return io_error(fmt::format("cannot write '{}'", tmp.string()));
  }
  fs::rename(tmp, cfg, ec);
  if (ec) return io_error(fmt::format("cannot rename '{}': {}", tmp.string(), ec.message()));
  return Status::ok();
}

Status write_gguf_lora(const std::string& path, const LlamaShape& shape, const LoraLayout& layout,
                       std::span<const float> params, const std::string& name) {
  TS_RETURN_IF_ERROR(check(shape, layout, params));
  using model::GgufValue;
  model::GgufWriter w;
  model::Metadata& m = w.metadata();
  m.set("general.architecture", GgufValue::string("llama"));
  m.set("general.type", GgufValue::string("adapter"));
  m.set("general.name", GgufValue::string(name));
  m.set("adapter.type", GgufValue::string("lora"));
  m.set("adapter.lora.alpha", GgufValue::f32(static_cast<float>(layout.config.alpha)));
  const int64_t r = layout.config.rank;
  for (const LoraTensor& t : layout.tensors) {
    TS_RETURN_IF_ERROR(w.add_tensor(t.target + ".lora_a", kernels::DType::kF32, {t.n_in, r},
                                    bytes_of(params.data() + t.a_offset, r * t.n_in)));
    TS_RETURN_IF_ERROR(w.add_tensor(t.target + ".lora_b", kernels::DType::kF32, {r, t.n_out},
                                    bytes_of(params.data() + t.b_offset, t.n_out * r)));
  }
  return w.write(path);
}

}  // namespace tessera::train
