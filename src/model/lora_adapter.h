// LoRA adapters: low-rank updates W' = W + scale * B * A of a base model's weight matrices,
// read from the two formats people have and checked against the base model they will run on.
//
// Formats:
//  - PEFT (Hugging Face): a directory with adapter_config.json (peft_type LORA, r, lora_alpha,
//    use_rslora, target_modules, ...) and adapter_model.safetensors whose tensors are named
//    base_model.model.model.layers.N.{self_attn.{q,k,v,o}_proj | mlp.{gate,up,down}_proj}
//    .lora_{A,B}.weight, A as [r, in] and B as [out, r] (PyTorch order). `path` may name the
//    directory or the .safetensors file inside it.
//  - GGUF LoRA (llama.cpp's layout, general.type = adapter, adapter.type = lora,
//    adapter.lora.alpha): tensors <base tensor name>.lora_a with ne = {in, r} and .lora_b with
//    ne = {r, out}; general.architecture must be the base's.
// Names map onto the base's GGUF tensors: q/k/v/o -> blk.N.attn_{q,k,v,output}.weight and
// gate/up/down -> blk.N.ffn_{gate,up,down}.weight; any other target is refused by name.
//
// Scale per matrix: alpha / r (alpha / sqrt(r) with PEFT's use_rslora), r the matrix's own rank
// (so PEFT's rank_pattern is honoured); a GGUF alpha of 0 means scale 1, as llama.cpp reads it.
// PEFT's B rows of q_proj and k_proj are permuted as Llama-family GGUF converters permute the base
// q/k rows (the checkpoint's half-split RoPE layout to GGML's adjacent pairs), so that the update
// lands on the rows it was trained for; a GGUF LoRA already carries them permuted.
// Refused with a clear error: DoRA, fan_in_fan_out (GPT-2 Conv1D layouts), trained biases,
// modules_to_save, alpha_pattern, ranks above kMaxLoraRank, a pair missing its A or B, shapes
// that do not match the base, non-finite values, unreadable dtypes.
// Thread-safety: pure functions; a loaded LoraAdapter is immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/format/model_file.h"

namespace tessera::model {

constexpr int64_t kMaxLoraRank = 256;

enum class LoraFormat { kPeft, kGguf };

// The update of one base matrix (rows = outputs, columns = inputs, as the base's GGUF rows).
struct LoraMatrix {
  std::string target;  // the base tensor, e.g. "blk.3.attn_q.weight"
  int64_t rank = 0;
  int64_t n_in = 0;        // columns of the base matrix (its ne[0])
  int64_t n_out = 0;       // rows of the base matrix (its ne[1])
  float scale = 1.0f;      // alpha / rank (see above)
  // How A and Bt are held: f32, or f16/bf16 when the file held both A and B in that type (kept
  // as is: exact, and half the bytes every step that uses the adapter reads).
  kernels::DType dtype = kernels::DType::kF32;
  std::vector<float> a;    // f32: rank x n_in, row-major: A's row k is a[k * n_in ...]
  // B held transposed: rank x n_out, row-major (Bt's row k is column k of B, B's rows in the base's
  // GGUF order), the layout the batched expand reads (kernels/lora.h). B[o][k] = bt[k * n_out + o].
  std::vector<float> bt;
  std::vector<uint16_t> a16, bt16;  // f16/bf16: the same layouts (a and bt then empty)

  const void* a_data() const { return dtype == kernels::DType::kF32 ? static_cast<const void*>(a.data()) : a16.data(); }
  const void* bt_data() const { return dtype == kernels::DType::kF32 ? static_cast<const void*>(bt.data()) : bt16.data(); }
  std::vector<float> a_f32() const;   // A's values as f32, whatever the storage
  std::vector<float> bt_f32() const;  // Bt's
  size_t bytes() const;               // of A and Bt as held
};

struct LoraAdapter {
  std::string path;
  LoraFormat format = LoraFormat::kPeft;
  float alpha = 0.0f;
  std::vector<LoraMatrix> matrices;  // in the base's tensor order

  const LoraMatrix* find(std::string_view target) const;
  int64_t max_rank() const;
  size_t bytes() const;  // of A and B as held
};

// Loads the adapter at `path` (see the formats above) for `base`.
// Errors: kNotFound (no such file/directory, no adapter_config.json beside a .safetensors),
// kCorruptData (malformed files), kInvalidArgument (adapter and base do not match: an unknown
// target, a tensor the base lacks, a shape mismatch, another architecture), kUnsupported (a
// PEFT feature or dtype Tessera does not apply yet); every message names the tensor or field.
Result<LoraAdapter> load_lora_adapter(const std::string& path, const ModelFile& base);

struct MergeReport {
  int64_t n_merged = 0;     // base matrices updated
  int64_t n_requantized = 0;  // of those, stored in a quantized type (re-encoded: lossy)
};

// Writes `base` with every adapter matrix merged in (W + user_scale * scale * B * A, computed in
// f32 row by row and stored back in each tensor's own type) as GGUF at `out_path`: the reference
// the batched adapter path is compared with. Errors: kUnsupported (a base type without kernels),
// kIoError.
Result<MergeReport> merge_lora(const ModelFile& base, const LoraAdapter& adapter,
                               const std::string& out_path, float user_scale = 1.0f);

}  // namespace tessera::model
