// LoRA adapters to train on a frozen llama base: which weight matrices get one, their rank and
// alpha, and where each adapter's A and B sit in one flat parameter buffer. For a target weight
// W [out, in] (a GGUF row per output), A is [r, in] and B is [out, r], both row-major, and the
// adapted layer computes y = x W^T + scale * (x A^T) B^T with scale = alpha / r (PEFT's LoRA,
// without rsLoRA or dropout). B's rows follow the base's GGUF rows (GGML's adjacent-pair RoPE
// layout for q and k); lora_writer.h converts to PEFT's order when it writes PEFT.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/train/llama_trainer.h"

namespace tessera::train {

// The matrices of a llama block an adapter may target, in the base's tensor order (the same
// order as model::LoraSlot).
enum class LoraTarget : uint8_t { kQ, kK, kV, kO, kGate, kUp, kDown };
constexpr int kLoraTargets = 7;

// "q", "k", "v", "o", "gate", "up", "down".
std::string_view lora_target_name(LoraTarget t);
// The PEFT module path after "layers.N.": "self_attn.q_proj", ..., "mlp.down_proj".
std::string_view lora_peft_module(LoraTarget t);
// The GGUF tensor stem after "blk.N.": "attn_q", ..., "ffn_down".
std::string_view lora_gguf_stem(LoraTarget t);

// A comma-separated list of targets: short names (q,k,v,o,gate,up,down), PEFT module names
// (q_proj, ..., down_proj) or "all"; duplicates collapse; returned in the base's tensor order.
// Errors: kInvalidArgument naming an unknown entry, or an empty list.
Result<std::vector<LoraTarget>> parse_lora_targets(std::string_view csv);

struct LoraConfig {
  int64_t rank = 8;
  double alpha = 8.0;                 // scale = alpha / rank
  std::vector<LoraTarget> targets;    // in the base's tensor order, no duplicates
};

struct LoraTensor {
  std::string target;        // the base tensor, e.g. "blk.3.attn_q.weight"
  int64_t layer = 0;
  LoraTarget which = LoraTarget::kQ;
  int64_t n_in = 0, n_out = 0;   // the base matrix's columns and rows
  int64_t a_offset = 0;          // A [rank, n_in] in the flat buffer, in elements
  int64_t b_offset = 0;          // B [n_out, rank]
};

struct LoraLayout {
  LoraConfig config;
  double scale = 1.0;             // alpha / rank
  std::vector<LoraTensor> tensors;  // layer by layer, targets in order
  int64_t n_params = 0;
  std::vector<int32_t> index;     // [layers * kLoraTargets]: tensors' index, or -1 (no adapter)

  const LoraTensor* find(int64_t layer, LoraTarget t) const;
};

// Maximum rank (the serving side's limit, model::kMaxLoraRank).
constexpr int64_t kMaxTrainLoraRank = 256;

// The adapters of `config` on every layer of `shape`. Errors: kInvalidArgument (the shape, a
// rank outside [1, kMaxTrainLoraRank], a non-positive or non-finite alpha, no targets).
Result<LoraLayout> make_lora_layout(const LlamaShape& shape, const LoraConfig& config);

// PEFT's default initialization: A uniform in [-1/sqrt(in), 1/sqrt(in)] (kaiming_uniform_ with
// a = sqrt(5), as nn.Linear and PEFT initialize lora_A) and B zero, so the adapted model starts
// as the base. Deterministic in `seed`. Precondition: params has layout.n_params elements.
void init_lora_params(const LoraLayout& layout, std::span<float> params, uint64_t seed);

// Training FLOPs per token of LoRA on `shape` (T = shape.context): the base's matmuls forward
// and for the activation gradients (4 per base matrix parameter: no weight gradients), 6 per
// adapter parameter, and the attention products (as training_flops_per_token counts them).
double lora_flops_per_token(const LlamaShape& shape, const LoraLayout& layout);

}  // namespace tessera::train
