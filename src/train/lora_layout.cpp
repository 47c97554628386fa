#include "tessera/train/lora_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace tessera::train {
namespace {

struct TargetNames {
  std::string_view short_name, peft, gguf;
};
constexpr TargetNames kNames[kLoraTargets] = {
    {"q", "self_attn.q_proj", "attn_q"},     {"k", "self_attn.k_proj", "attn_k"},
    {"v", "self_attn.v_proj", "attn_v"},     {"o", "self_attn.o_proj", "attn_output"},
    {"gate", "mlp.gate_proj", "ffn_gate"},   {"up", "mlp.up_proj", "ffn_up"},
    {"down", "mlp.down_proj", "ffn_down"},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view lora_target_name(LoraTarget t) { return kNames[static_cast<int>(t)].short_name; }
std::string_view lora_peft_module(LoraTarget t) { return kNames[static_cast<int>(t)].peft; }
std::string_view lora_gguf_stem(LoraTarget t) { return kNames[static_cast<int>(t)].gguf; }

Result<std::vector<LoraTarget>> parse_lora_targets(std::string_view csv) {
  bool chosen[kLoraTargets] = {};
  size_t start = 0;
  while (start <= csv.size()) {
    const size_t comma = std::min(csv.find(',', start), csv.size());
    const std::string_view item = trim(csv.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) continue;
    if (item == "all") {
      std::fill(std::begin(chosen), std::end(chosen), true);
      continue;
    }
    bool known = false;
    for (int i = 0; i < kLoraTargets; ++i) {
      const std::string_view peft = kNames[i].peft;
      const std::string_view proj = peft.substr(peft.find('.') + 1);  // "q_proj"
      if (item == kNames[i].short_name || item == proj || item == peft) chosen[i] = known = true;
    }
    if (!known) {
      return invalid_argument(fmt::format("LoRA target '{}' is not one of q, k, v, o, gate, up, "
                                          "down (or q_proj ... down_proj, or all)", item));
    }
  }
  std::vector<LoraTarget> out;
  for (int i = 0; i < kLoraTargets; ++i) {
    if (chosen[i]) out.push_back(static_cast<LoraTarget>(i));
  }
  if (out.empty()) return invalid_argument("LoRA targets: the list is empty");
  return out;
}

const LoraTensor* LoraLayout::find(int64_t layer, LoraTarget t) const {
  const size_t at = static_cast<size_t>(layer * kLoraTargets + static_cast<int>(t));
  if (at >= index.size() || index[at] < 0) return nullptr;
  return &tensors[static_cast<size_t>(index[at])];
}

Result<LoraLayout> make_lora_layout(const LlamaShape& s, const LoraConfig& c) {
  TS_RETURN_IF_ERROR(validate(s));
  if (c.rank < 1 || c.rank > kMaxTrainLoraRank) {
    return invalid_argument(fmt::format("LoRA rank {} is outside 1 to {}", c.rank, kMaxTrainLoraRank));
  }
  if (!(c.alpha > 0) || !std::isfinite(c.alpha)) {
    return invalid_argument(fmt::format("LoRA alpha must be positive and finite, got {}", c.alpha));
  }
  if (c.targets.empty()) return invalid_argument("LoRA: no target matrices");
  LoraLayout l;
  l.config = c;
  std::sort(l.config.targets.begin(), l.config.targets.end());
  l.config.targets.erase(std::unique(l.config.targets.begin(), l.config.targets.end()),
                         l.config.targets.end());
  l.scale = c.alpha / static_cast<double>(c.rank);
  l.index.assign(static_cast<size_t>(s.layers * kLoraTargets), -1);
  const int64_t C = s.dim, HD = s.heads * s.head_dim(), GD = s.kv_heads * s.head_dim(), F = s.ffn;
  // [out, in] of each target.
  const std::pair<int64_t, int64_t> dims[kLoraTargets] = {{HD, C}, {GD, C}, {GD, C}, {C, HD},
                                                          {F, C},  {F, C},  {C, F}};
  for (int64_t layer = 0; layer < s.layers; ++layer) {
    for (LoraTarget t : l.config.targets) {
      LoraTensor x;
      x.layer = layer;
      x.which = t;
      x.target = fmt::format("blk.{}.{}.weight", layer, lora_gguf_stem(t));
      x.n_out = dims[static_cast<int>(t)].first;
      x.n_in = dims[static_cast<int>(t)].second;
      x.a_offset = l.n_params;
      x.b_offset = x.a_offset + c.rank * x.n_in;
      l.n_params = x.b_offset + x.n_out * c.rank;
      l.index[static_cast<size_t>(layer * kLoraTargets + static_cast<int>(t))] =
          static_cast<int32_t>(l.tensors.size());
      l.tensors.push_back(std::move(x));
    }
  }
  return l;
}

void init_lora_params(const LoraLayout& layout, std::span<float> params, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::fill(params.begin(), params.end(), 0.0f);
  for (const LoraTensor& t : layout.tensors) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(t.n_in));
    std::uniform_real_distribution<double> ud(-bound, bound);
    float* a = params.data() + t.a_offset;
    for (int64_t i = 0; i < layout.config.rank * t.n_in; ++i) a[i] = static_cast<float>(ud(rng));
  }
}

double lora_flops_per_token(const LlamaShape& s, const LoraLayout& layout) {
  int64_t total = 0;
  double matmul_params = 0;
  for (const ParamTensor& t : llama_param_layout(s, &total)) {
    if (t.matrix && t.name != "token_embd.weight") matmul_params += static_cast<double>(t.size);
  }
  const double attention = 6.0 * static_cast<double>(s.layers) * static_cast<double>(s.context) *
                           static_cast<double>(s.dim);
  return 4.0 * matmul_params + 6.0 * static_cast<double>(layout.n_params) + attention;
}

}  // namespace tessera::train
