// Embeddings: a text's vector from the model's final hidden state (after the final norm, before
// the output projection), pooled over the positions - the mean of all of them, or the last one
// (for models trained that way; GGUF says so in "<arch>.pooling_type") - and L2-normalized.
// The input runs in a private one-slot KV cache of its own length: it neither uses nor disturbs
// the served KV pool and prefix cache.
// Thread-safety: compute_embedding() uses `model` (not thread-safe): call it from the thread that
// owns the model (Engine::embed does).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/model/format/metadata.h"
#include "tessera/model/model.h"

namespace tessera::engine {

enum class Pooling { kMean, kLast };

std::string_view pooling_name(Pooling p);  // "mean", "last"
// "mean" or "last". Errors: kInvalidArgument naming what was given and what is accepted.
Result<Pooling> parse_pooling(std::string_view name);
// The pooling a model file asks for: "<arch>.pooling_type" 3 (last) gives kLast; anything else
// (absent, 1 mean, or types not implemented here such as CLS) gives kMean.
Pooling pooling_from_metadata(const model::Metadata& metadata);

// The pooled, L2-normalized final hidden state of `tokens` (non-empty, every id in the
// vocabulary): config().dim floats. The tokens run through the model in chunks of at most
// `max_rows` rows. `pool` may be null. A vector of zeros (norm 0) is returned as is.
// Errors: the model's (kUnsupported for architectures without forward_hidden), kInvalidArgument
// for an empty input or a bad token, kResourceExhausted when the private KV cache cannot be had.
Result<std::vector<float>> compute_embedding(model::Model& model, std::span<const int32_t> tokens,
                                             Pooling pooling, int64_t max_rows, ThreadPool* pool);

}  // namespace tessera::engine
