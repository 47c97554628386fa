#include "tessera/serve/json_body.h"

#include <fmt/format.h>

#include "tessera/serve/api_error.h"
#include "tessera/serve/openai_request.h"

namespace tessera::serve {

void reject_request(ResponseWriter& writer, std::string message, std::string param) {
  writer.respond(api_error_response(invalid_request(std::move(message), std::move(param))));
}

bool read_json_object(std::string_view body, std::initializer_list<std::string_view> accepted,
                      int max_nesting, ResponseWriter& writer, nlohmann::json* out) {
  if (json_nesting_depth(body, max_nesting) > max_nesting) {
    reject_request(writer, fmt::format("request body nests deeper than {} levels", max_nesting));
    return false;
  }
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    reject_request(writer, "request body must be a JSON object");
    return false;
  }
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (std::string_view a : accepted) known = known || a == key;
    if (known) continue;
    std::string list;
    for (std::string_view a : accepted) list += (list.empty() ? "" : ", ") + std::string(a);
    reject_request(writer,
                   fmt::format("'{}' is not supported by this server; remove it from the request "
                               "(accepted fields: {})",
                               key, list),
                   key);
    return false;
  }
  *out = std::move(doc);
  return true;
}

}  // namespace tessera::serve
