// `bench serve --response-format FILE`: one structured-output constraint applied to every query.
// The file holds an OpenAI response_format object ({"type": "json_schema", "json_schema":
// {"name": ..., "schema": {...}}}, {"type": "json_object"} or {"type": "text"}) or a bare JSON
// Schema, which is sent as a json_schema response_format. HTTP targets get the object in every
// request body; the in-process engine gets the compiled schema.
// Thread-safety: plain values and functions.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/engine/json_schema.h"

namespace tessera::bench {

struct BenchResponseFormat {
  nlohmann::json body;                               // the response_format object to send
  std::shared_ptr<const engine::JsonSchema> schema;  // what the engine enforces; null for text
};

// Reads and compiles `path`. Errors: kNotFound (unreadable), kInvalidArgument (not JSON, not an
// object, a response_format without its schema), the schema compiler's (kUnsupported naming the
// keyword), each prefixed with "--response-format PATH".
Result<BenchResponseFormat> load_response_format(const std::string& path);
// The same from a parsed value (for tests and callers with the JSON in hand).
Result<BenchResponseFormat> make_response_format(const nlohmann::json& value);

}  // namespace tessera::bench
