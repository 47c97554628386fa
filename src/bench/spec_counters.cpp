#include "tessera/bench/spec_counters.h"

#include <string>

#include "tessera/bench/http_call.h"

namespace tessera::bench {

namespace {

// The value at the end of a sample line, or nullopt.
std::optional<double> sample_value(std::string_view line) {
  const size_t sp = line.find_last_of(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const std::string v(line.substr(sp + 1));
  try {
    size_t used = 0;
    const double d = std::stod(v, &used);
    if (used != v.size()) return std::nullopt;
    return d;
  } catch (...) {
    return std::nullopt;
  }
}
}  // namespace

std::optional<SpecCounters> parse_spec_counters(std::string_view text) {
  SpecCounters c;
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    double* into = nullptr;
    for (const auto& [name, field] : {std::pair{std::string_view("tessera_spec_draft_tokens_total"), &c.draft_tokens},
                                      std::pair{std::string_view("tessera_spec_accepted_tokens_total"), &c.accepted_tokens}}) {
      if (line.starts_with(name) && line.size() > name.size() &&
          (line[name.size()] == '{' || line[name.size()] == ' ')) {
        into = field;
      }
    }
    if (into == nullptr) continue;
    if (const std::optional<double> v = sample_value(line)) {
      *into += *v;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return c;
}

std::optional<SpecCounters> scrape_spec_counters(const std::string& url, double timeout_s) {
  const Result<HttpReply> reply = http_call(url, "GET", "/metrics", "", timeout_s);
  if (!reply.is_ok() || reply->status != 200) return std::nullopt;
  return parse_spec_counters(reply->body);
}

}  // namespace tessera::bench
