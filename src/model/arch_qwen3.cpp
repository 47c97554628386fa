// Qwen3 (dense): tensors as llama.cpp's converter writes them (llama's names plus
// blk.N.attn_q_norm.weight and blk.N.attn_k_norm.weight, [head_dim] each).
#include "tessera/model/decoder.h"
#include "tessera/model/families.h"

namespace tessera::model {

Result<std::unique_ptr<Model>> build_qwen3(std::shared_ptr<const ModelFile> file,
                                           const LoadOptions& options) {
  TS_ASSIGN_OR_RETURN(ModelConfig config, read_model_config(file->metadata, "qwen3"));
  ArchTraits traits;
  traits.rope = qwen3_architecture().rope;
  traits.qk_norm = true;
  return build_decoder(std::move(file), options, std::move(config), std::move(traits));
}

const Architecture& qwen3_architecture() {
  static const Architecture kArch = {"qwen3", &build_qwen3, RopeStyle::kNeox};
  return kArch;
}

}  // namespace tessera::model
