#include "tessera/model/llama.h"

#include "tessera/model/decoder.h"
#include "tessera/model/families.h"

namespace tessera::model {

Result<std::unique_ptr<Model>> build_llama(std::shared_ptr<const ModelFile> file,
                                           const LoadOptions& options) {
  // llama.cpp's "llama" reads no sliding window (Mistral 7B converts to it and runs with full
  // attention there); neither does this family, so both give the same logits on the same file.
  TS_ASSIGN_OR_RETURN(ModelConfig config, read_model_config(file->metadata, "llama"));
  ArchTraits traits;
  traits.rope = llama_architecture().rope;
  return build_decoder(std::move(file), options, std::move(config), std::move(traits));
}

const Architecture& llama_architecture() {
  static const Architecture kArch = {"llama", &build_llama, RopeStyle::kNormal};
  return kArch;
}

}  // namespace tessera::model
