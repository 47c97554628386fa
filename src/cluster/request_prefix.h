// request_prefix_text: the text of an OpenAI request body whose prefix a replica's prefix cache
// would hold - the prompt (text or token ids; of a batch of token-id prompts, the first), the
// chat messages in order (role and content), or the embeddings input. The router keys prefix
// affinity (prefix_affinity.h) by it.
// Thread-safety: a pure function.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera::cluster {

std::string request_prefix_text(const nlohmann::json& body);

}  // namespace tessera::cluster
