// The Llama architecture ("llama" in GGUF): Llama 1/2/3 (incl. llama3 RoPE scaling), Mistral,
// TinyLlama, SmolLM and llama2.c checkpoints. Pre-norm decoder: RMSNorm, grouped-query attention
// with RoPE on adjacent pairs, SwiGLU FFN, tied or separate output projection.
// Thread-safety: see Model.
#pragma once

#include <memory>

#include "tessera/model/load_options.h"
#include "tessera/model/model.h"

namespace tessera::model {

// Validates every tensor's presence, dtype and shape against the metadata, then builds (and
// repacks, see load_options.h).
Result<std::unique_ptr<Model>> build_llama(std::shared_ptr<const ModelFile> file,
                                           const LoadOptions& options);

}  // namespace tessera::model
