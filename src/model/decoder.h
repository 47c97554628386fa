// The shared decoder-only transformer that every registered family runs: pre-norm blocks of
// RMSNorm, grouped-query attention with RoPE, and a gated FFN, with the per-family differences
// (QKV biases, per-head Q/K norms, RoPE pairing and per-layer bases, sliding windows, the FFN's
// activation, post-norms, embedding scale, score scale and soft-caps) taken from ArchTraits. Family
// files (llama.cpp, arch_qwen2.cpp, ...) read their keys and call build_decoder; none copies the
// forward pass.
// Thread-safety: see Model.
#pragma once

#include <memory>

#include "tessera/model/arch_traits.h"
#include "tessera/model/load_options.h"
#include "tessera/model/model.h"

namespace tessera::model {

// Validates every tensor the config and traits call for (presence, dtype, shape), then builds
// the model (and repacks, see load_options.h). `config.n_layers` entries in
// traits.layer_window (and traits.layer_rope), or none. Errors: kNotFound / kCorruptData /
// kUnsupported naming the tensor; kInvalidArgument for a layer_window or layer_rope of the wrong
// length, or a negative or non-finite scale or cap.
Result<std::unique_ptr<Model>> build_decoder(std::shared_ptr<const ModelFile> file,
                                             const LoadOptions& options, ModelConfig config,
                                             ArchTraits traits);

}  // namespace tessera::model
