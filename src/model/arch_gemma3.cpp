// Gemma 3 (text decoder): Gemma 2's block (sqrt(D)-scaled embeddings, GeGLU, post-norms, norm
// weights stored as 1 + w) with per-head Q/K RMSNorm instead of attention soft-capping; when
// the file names a sliding window, five local layers to each global one, the local layers
// with RoPE base `gemma3.rope.freq_base_swa` (10000 when absent) and no scaling, the global
// ones with the file's base and scaling, as llama.cpp runs them.
#include "tessera/model/decoder.h"
#include "tessera/model/families.h"

namespace tessera::model {

Result<std::unique_ptr<Model>> build_gemma3(std::shared_ptr<const ModelFile> file,
                                            const LoadOptions& options) {
  const Metadata& m = file->metadata;
  TS_ASSIGN_OR_RETURN(ModelConfig config, read_model_config(m, "gemma3"));
  ArchTraits traits;
  traits.rope = gemma3_architecture().rope;
  traits.qk_norm = true;
  traits.scale_embedding = true;
  traits.ffn_activation = FfnActivation::kGeluTanh;
  traits.post_norms = true;
  TS_ASSIGN_OR_RETURN(double final_cap, m.get_float_or("gemma3.final_logit_softcapping", 0.0));
  traits.final_softcap = static_cast<float>(final_cap);
  traits.attn_scale = gemma_attention_scale(config);
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> uniform,
                      read_sliding_window(m, "gemma3", config.n_layers));
  if (!uniform.empty()) {
    TS_ASSIGN_OR_RETURN(traits.layer_window,
                        interleaved_windows(m, "gemma3", config.n_layers, uniform.front(), 6));
    RopeConfig local;
    TS_ASSIGN_OR_RETURN(local.freq_base, m.get_float_or("gemma3.rope.freq_base_swa", 10000.0));
    if (!(local.freq_base > 0.0)) return corrupt_data("gemma3.rope.freq_base_swa must be positive");
    for (int64_t w : traits.layer_window) traits.layer_rope.push_back(w > 0 ? local : config.rope);
  }
  return build_decoder(std::move(file), options, std::move(config), std::move(traits));
}

const Architecture& gemma3_architecture() {
  static const Architecture kArch = {"gemma3", &build_gemma3, RopeStyle::kNeox};
  return kArch;
}

}  // namespace tessera::model
