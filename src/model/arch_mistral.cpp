// Mistral: Llama's tensors and RoPE, with a sliding window on every layer when the file names one.
#include "tessera/model/decoder.h"
#include "tessera/model/families.h"

namespace tessera::model {

Result<std::unique_ptr<Model>> build_mistral(std::shared_ptr<const ModelFile> file,
                                             const LoadOptions& options) {
  TS_ASSIGN_OR_RETURN(ModelConfig config, read_model_config(file->metadata, "mistral"));
  ArchTraits traits;
  traits.rope = mistral_architecture().rope;
  TS_ASSIGN_OR_RETURN(traits.layer_window,
                      read_sliding_window(file->metadata, "mistral", config.n_layers));
  return build_decoder(std::move(file), options, std::move(config), std::move(traits));
}

const Architecture& mistral_architecture() {
  static const Architecture kArch = {"mistral", &build_mistral, RopeStyle::kNormal};
  return kArch;
}

}  // namespace tessera::model
