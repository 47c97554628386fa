// POST /v1/embeddings: OpenAI's embeddings API over a served model. "input" is a string, an
// array of strings, an array of token ids or an array of such arrays (at most kMaxEmbeddingInputs
// inputs); each becomes one vector: the model's final hidden state pooled as the model entry says
// (mean or last token) and L2-normalized (engine/embedding.h). "encoding_format" "float"
// (default) or "base64" (little-endian float32, what the official Python client asks for);
// "dimensions" only as the model's own width; "user" is accepted and ignored.
// Response: {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": ...}],
// "model": ..., "usage": {"prompt_tokens": N, "total_tokens": N}}.
// Errors: 400 naming the field (malformed input, an unknown field, a token outside the
// vocabulary, an input longer than the context); 404 unknown model; the backend's (400 for a
// model that does not serve embeddings, 503 when stopping).
// Thread-safety: runs on the connection's executor; results are posted back to it.
#pragma once

#include <cstddef>

#include "tessera/serve/route_context.h"

namespace tessera::serve {

inline constexpr size_t kMaxEmbeddingInputs = 256;

void handle_embeddings(const RouteContext& ctx, HttpRequest&& request,
                       std::shared_ptr<ResponseWriter> writer);

}  // namespace tessera::serve
