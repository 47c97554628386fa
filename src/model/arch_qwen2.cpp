// Qwen2: tensors as llama.cpp's converter writes them (llama's names plus blk.N.attn_{q,k,v}.bias).
#include "tessera/model/decoder.h"
#include "tessera/model/families.h"

namespace tessera::model {

Result<std::unique_ptr<Model>> build_qwen2(std::shared_ptr<const ModelFile> file,
                                           const LoadOptions& options) {
  TS_ASSIGN_OR_RETURN(ModelConfig config, read_model_config(file->metadata, "qwen2"));
  ArchTraits traits;
  traits.rope = qwen2_architecture().rope;
  traits.qkv_bias = true;
  return build_decoder(std::move(file), options, std::move(config), std::move(traits));
}

const Architecture& qwen2_architecture() {
  static const Architecture kArch = {"qwen2", &build_qwen2, RopeStyle::kNeox};
  return kArch;
}

}  // namespace tessera::model
