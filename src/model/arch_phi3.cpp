// Phi-3: tensors as llama.cpp's converter writes them (blk.N.attn_qkv.weight, or separate Q/K/V,
// and blk.N.ffn_up.weight holding gate and up); NeoX RoPE.
#include <fmt/format.h>

#include "tessera/model/decoder.h"
#include "tessera/model/families.h"

namespace tessera::model {

Result<std::unique_ptr<Model>> build_phi3(std::shared_ptr<const ModelFile> file,
                                          const LoadOptions& options) {
  TS_ASSIGN_OR_RETURN(ModelConfig config, read_model_config(file->metadata, "phi3"));
  // The 128k-context models scale RoPE per dimension (LongRoPE, rope_factors_long/short); not
  // implemented: refuse rather than run them with plain RoPE.
  for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    if (file->find_tensor(t) != nullptr) {
      return unsupported(fmt::format("tensor '{}': Phi-3 LongRoPE scaling is not supported", t));
    }
  }
  ArchTraits traits;
  traits.rope = phi3_architecture().rope;
  traits.fused_qkv = true;
  traits.fused_gate_up = true;
  // phi3.attention.sliding_window is not read: llama.cpp disables Phi-3's window too (its
  // loader warns), and matching its outputs on the same file matters more here.
  return build_decoder(std::move(file), options, std::move(config), std::move(traits));
}

const Architecture& phi3_architecture() {
  static const Architecture kArch = {"phi3", &build_phi3, RopeStyle::kNeox};
  return kArch;
}

}  // namespace tessera::model
