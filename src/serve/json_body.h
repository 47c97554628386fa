// Reading the JSON body of a small route (/tokenize, /detokenize, /v1/embeddings): an object
// whose fields are all in the route's accepted list, answered with an OpenAI-style 400 naming the
// field otherwise. (The generation routes have their own field table: openai_request.h.)
// Thread-safety: pure functions; the writer is used from the calling handler only.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tessera/serve/http_message.h"

namespace tessera::serve {

// Parses `body` into *out. On a body that nests deeper than `max_nesting`, is not a JSON object,
// or has a field outside `accepted`, answers 400 through `writer` and returns false.
bool read_json_object(std::string_view body, std::initializer_list<std::string_view> accepted,
                      int max_nesting, ResponseWriter& writer, nlohmann::json* out);

// Answers 400 invalid_request_error with `message`, naming `param` ("" for none).
void reject_request(ResponseWriter& writer, std::string message, std::string param = {});

}  // namespace tessera::serve
