// POST /tokenize and POST /detokenize: a served model's tokenizer over HTTP, in both dialects
// clients use:
//   llama-server  {"content": "..."}           -> {"tokens": [...]}
//                 {"tokens": [...]}            -> {"content": "..."}
//   vLLM          {"prompt": "...", "model": M} -> {"tokens": [...], "count": N, "max_model_len": L}
//                 {"tokens": [...], "model": M} -> {"prompt": "..."}
// /detokenize answers both names ("content" and "prompt", the same text). Special tokens (BOS as
// the vocabulary's metadata says) are added when "add_special" (llama-server's name, default
// false) or "add_special_tokens" (vLLM's, default true) says so; with both absent the dialect's
// default applies. "with_pieces" (llama-server) gives [{"id", "piece"}] instead of bare ids.
// Errors: 400 naming the field for a malformed body, an unknown field, or a token id outside the
// vocabulary; 404 for an unknown model.
// Thread-safety: runs on the connection's executor, like every handler.
#pragma once

#include "tessera/serve/route_context.h"

namespace tessera::serve {

void handle_tokenize(const RouteContext& ctx, HttpRequest&& request,
                     std::shared_ptr<ResponseWriter> writer);
void handle_detokenize(const RouteContext& ctx, HttpRequest&& request,
                       std::shared_ptr<ResponseWriter> writer);

}  // namespace tessera::serve
