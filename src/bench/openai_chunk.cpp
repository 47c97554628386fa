#include "tessera/bench/openai_chunk.h"

#include <nlohmann/json.hpp>

namespace tessera::bench {

Result<OpenAiChunk> parse_openai_chunk(std::string_view data, bool chat) {
  OpenAiChunk c;
  if (data == "[DONE]") {
    c.done = true;
    return c;
  }
  try {
    const auto j = nlohmann::json::parse(data);
    if (!j.is_object()) return corrupt_data("stream event is not a JSON object");
    if (j.contains("error")) {
      const auto& e = j["error"];
      c.error = e.is_object() && e.contains("message") ? e["message"].get<std::string>() : e.dump();
      return c;
    }
    bool known = false;
    if (j.contains("choices") && j["choices"].is_array()) {
      known = true;
      if (!j["choices"].empty()) {
        const auto& ch = j["choices"][0];
        if (chat) {
          if (ch.contains("delta") && ch["delta"].is_object()) {
            const auto& d = ch["delta"];
            for (const char* k : {"reasoning_content", "content"}) {
              if (d.contains(k) && d[k].is_string()) c.text += d[k].get<std::string>();
            }
          }
        } else if (ch.contains("text") && ch["text"].is_string()) {
          c.text = ch["text"].get<std::string>();
        }
      }
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      known = true;
      const auto& u = j["usage"];
      c.has_usage = true;
      c.prompt_tokens = u.value("prompt_tokens", -1);
      c.completion_tokens = u.value("completion_tokens", -1);
    }
    if (j.contains("timings") && j["timings"].is_object()) {
      const auto& t = j["timings"];
      c.server_prompt_ms = t.value("prompt_ms", -1.0);
      c.server_predicted_ms = t.value("predicted_ms", -1.0);
    }
    if (!known) return corrupt_data("stream event has no choices, usage or error: " +
                                    std::string(data.substr(0, 200)));
  } catch (const std::exception& e) {
    return corrupt_data(std::string("stream event is not JSON (") + e.what() + "): " +
                        std::string(data.substr(0, 200)));
  }
  return c;
}

}  // namespace tessera::bench
