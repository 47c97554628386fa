// libFuzzer target for structured output's untrusted inputs: a request's JSON schema (compiled by
// engine::JsonSchema) and the bytes a model writes under it (walked by engine::JsonMatcher).
// Input: the schema's JSON text, a NUL byte, then the document bytes. Must never crash, leak or
// trip ASan/UBSan; and whenever the matcher accepts the whole document as complete, the document
// must be JSON that nlohmann parses (the matcher never accepts what is not JSON); and the closing
// bytes from the longest accepted prefix complete a value that parses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessera/engine/json_matcher.h"
#include "tessera/engine/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  if (nul == std::string_view::npos) return 0;
  const std::string_view schema_text = in.substr(0, nul);
  const std::string_view doc = in.substr(nul + 1);
  nlohmann::json schema = nlohmann::json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  auto compiled = tessera::engine::JsonSchema::compile(schema);
  if (!compiled.is_ok()) return 0;
  tessera::engine::JsonMatcher m(*compiled);
  size_t fed = 0;
  for (char c : doc) {
    if (!m.feed(static_cast<uint8_t>(c))) break;
    ++fed;
  }
  // From any accepted prefix, the closing bytes (when found within their bound) complete a
  // value: the matcher has no dead ends, recursive and bounded-number schemas included.
  if (const auto close = m.closing_bytes(); close.has_value()) {
    tessera::engine::JsonMatcher done(*compiled);
    done.assign_state(m);
    if (!done.feed(*close) || !done.complete()) std::abort();
    const std::string text = std::string(doc.substr(0, fed)) + *close;
    if (nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false).is_discarded()) std::abort();
  }
  if (fed != doc.size()) return 0;
  if (m.complete()) {
    const auto parsed = nlohmann::json::parse(doc, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) std::abort();  // accepted something that is not JSON
  }
  return 0;
}
