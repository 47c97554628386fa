#include "tessera/cluster/request_prefix.h"

#include <fmt/format.h>

namespace tessera::cluster {

std::string request_prefix_text(const nlohmann::json& body) {
  using json = nlohmann::json;
  std::string text;
  auto add = [&](const auto& self, const json& v, int depth = 0) -> void {
    if (v.is_string()) {
      text += v.get<std::string>();
    } else if (v.is_array()) {
      for (const auto& part : v) {
        if (part.is_string()) text += part.get<std::string>();
        // A prompt of token ids: the ids themselves, fixed width, so equal prefixes of ids are
        // equal prefixes of text.
        if (part.is_number_integer()) text += fmt::format("{:08x}", part.get<int64_t>() & 0xffffffff);
        if (part.is_object() && part.contains("text") && part["text"].is_string()) {
          text += part["text"].get<std::string>();
        }
        // A batch of token-id prompts ([[ids], [ids]]): keyed by the first (one level only: a
        // hostile body nests arrays deeper than any stack).
        if (part.is_array() && depth == 0) {
          self(self, part, 1);
          break;
        }
      }
    }
  };
  if (auto it = body.find("messages"); it != body.end() && it->is_array()) {
    for (const auto& msg : *it) {
      if (!msg.is_object()) continue;
      if (auto r = msg.find("role"); r != msg.end() && r->is_string()) text += r->get<std::string>();
      text += '\n';
      if (auto c = msg.find("content"); c != msg.end()) add(add, *c);
      text += '\n';
    }
  } else if (auto p = body.find("prompt"); p != body.end()) {
    add(add, *p);
  } else if (auto in = body.find("input"); in != body.end()) {
    add(add, *in);
  }
  return text;
}

}  // namespace tessera::cluster
