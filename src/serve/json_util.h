// JSON helpers for the serve layer (the only layer that speaks JSON): serialization that never
// throws on the invalid UTF-8 a token piece may carry (it is replaced by U+FFFD).
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tessera::serve {

// Compact JSON text of `j`; invalid UTF-8 in strings becomes U+FFFD instead of an exception.
inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tessera::serve
