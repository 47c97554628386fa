// Gemma 2: tensors and keys as llama.cpp's converter writes them (norm weights already hold
// 1 + w, so they multiply plainly); NeoX RoPE; sqrt(D)-scaled embeddings; GeGLU FFN; post-norms
// after attention and FFN; soft-capped attention scores and final logits; every other layer
// local (sliding window), starting with layer 0, as llama.cpp lays them out.
#include <cmath>

#include "tessera/model/decoder.h"
#include "tessera/model/families.h"

namespace tessera::model {

Result<std::unique_ptr<Model>> build_gemma2(std::shared_ptr<const ModelFile> file,
                                            const LoadOptions& options) {
  const Metadata& m = file->metadata;
  TS_ASSIGN_OR_RETURN(ModelConfig config, read_model_config(m, "gemma2"));
  ArchTraits traits;
  traits.rope = gemma2_architecture().rope;
  traits.scale_embedding = true;
  traits.ffn_activation = FfnActivation::kGeluTanh;
  traits.post_norms = true;
  // llama.cpp's defaults when the keys are absent: caps 50 and 30, window 4096, period 2.
  TS_ASSIGN_OR_RETURN(double attn_cap, m.get_float_or("gemma2.attn_logit_softcapping", 50.0));
  TS_ASSIGN_OR_RETURN(double final_cap, m.get_float_or("gemma2.final_logit_softcapping", 30.0));
  traits.attn_softcap = static_cast<float>(attn_cap);
  traits.final_softcap = static_cast<float>(final_cap);
  traits.attn_scale = gemma_attention_scale(config);
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> uniform,
                      read_sliding_window(m, "gemma2", config.n_layers));
  TS_ASSIGN_OR_RETURN(traits.layer_window,
                      interleaved_windows(m, "gemma2", config.n_layers,
                                          uniform.empty() ? 4096 : uniform.front(), 2));
  // Local layers use the file's RoPE unless it names another base for them.
  if (m.contains("gemma2.rope.freq_base_swa")) {
    RopeConfig local = config.rope;
    TS_ASSIGN_OR_RETURN(local.freq_base, m.get_float("gemma2.rope.freq_base_swa"));
    if (!(local.freq_base > 0.0)) return corrupt_data("gemma2.rope.freq_base_swa must be positive");
    for (int64_t w : traits.layer_window) traits.layer_rope.push_back(w > 0 ? local : config.rope);
  }
  return build_decoder(std::move(file), options, std::move(config), std::move(traits));
}

float gemma_attention_scale(const ModelConfig& c) {
  // llama.cpp (after gemma_pytorch's config): 1/sqrt(query_pre_attn_scalar), taken as
  // 1/sqrt(D / heads) for the 27B models (recognised by their layer count: 46 for Gemma 2, 62
  // for Gemma 3) and 1/sqrt(key_length) otherwise.
  const bool is_27b = c.architecture == "gemma2" ? c.n_layers == 46 : c.n_layers == 62;
  const int64_t d = is_27b ? c.dim / c.n_heads : c.head_dim;
  return 1.0f / std::sqrt(static_cast<float>(d));
}

const Architecture& gemma2_architecture() {
  static const Architecture kArch = {"gemma2", &build_gemma2, RopeStyle::kNeox};
  return kArch;
}

}  // namespace tessera::model
