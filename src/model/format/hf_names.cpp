#include "tessera/model/format/hf_names.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>

namespace tessera::model {
namespace {

constexpr HfProjection kProjections[] = {
    {"self_attn.q_proj", "attn_q"},   {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},   {"self_attn.o_proj", "attn_output"},
    {"mlp.gate_proj", "ffn_gate"},    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

// Block tensors other than the projection weights (the full name after "model.layers.N.").
constexpr std::pair<std::string_view, std::string_view> kBlockTensors[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
};

constexpr std::pair<std::string_view, std::string_view> kGlobalTensors[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

}  // namespace

std::span<const HfProjection> hf_projections() { return kProjections; }

std::optional<std::string_view> hf_projection_to_gguf(std::string_view hf_module) {
  for (const auto& [hf, gguf] : kProjections) {
    if (hf == hf_module) return gguf;
  }
  return std::nullopt;
}

std::optional<std::string> hf_tensor_to_gguf(std::string_view name) {
  for (const auto& [hf, gguf] : kGlobalTensors) {
    if (hf == name) return std::string(gguf);
  }
  constexpr std::string_view kLayers = "model.layers.";
  if (name.substr(0, kLayers.size()) != kLayers) return std::nullopt;
  const std::string_view after = name.substr(kLayers.size());
  size_t digits = 0;
  while (digits < after.size() && digits < 7 && after[digits] >= '0' && after[digits] <= '9') ++digits;
  if (digits == 0 || digits > 6 || digits >= after.size() || after[digits] != '.' ||
      (digits > 1 && after[0] == '0')) {
    return std::nullopt;
  }
  const std::string_view layer = after.substr(0, digits);
  const std::string_view rest = after.substr(digits + 1);
  for (const auto& [hf, gguf] : kBlockTensors) {
    if (hf == rest) return fmt::format("blk.{}.{}", layer, gguf);
  }
  constexpr std::string_view kWeight = ".weight";
  if (rest.size() > kWeight.size() && rest.substr(rest.size() - kWeight.size()) == kWeight) {
    if (auto p = hf_projection_to_gguf(rest.substr(0, rest.size() - kWeight.size()))) {
      return fmt::format("blk.{}.{}.weight", layer, *p);
    }
  }
  return std::nullopt;
}

Status permute_rope_rows(std::span<const std::byte> in, std::span<std::byte> out, int64_t n_rows,
                         size_t row_bytes, int64_t n_heads) {
  if (n_heads <= 0 || n_rows <= 0 || n_rows % (2 * n_heads) != 0) {
    return invalid_argument(
        fmt::format("{} rows do not split into {} heads of an even size", n_rows, n_heads));
  }
  const size_t total = static_cast<size_t>(n_rows) * row_bytes;
  if (in.size() != total || out.size() != total) {
    return invalid_argument(fmt::format("permuting {} rows of {} bytes: buffers of {} and {} bytes",
                                        n_rows, row_bytes, in.size(), out.size()));
  }
  const int64_t head = n_rows / n_heads, half = head / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t to = h * head + 2 * i + j, from = h * head + j * half + i;
        std::memcpy(out.data() + static_cast<size_t>(to) * row_bytes,
                    in.data() + static_cast<size_t>(from) * row_bytes, row_bytes);
      }
    }
  }
  return Status::ok();
}

}  // namespace tessera::model
