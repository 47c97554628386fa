#include "tessera/bench/spec_counters.h"

#include "tessera/bench/http_call.h"
#include "tessera/bench/metric_sums.h"

namespace tessera::bench {

std::optional<SpecCounters> parse_spec_counters(std::string_view text) {
  const std::optional<double> draft = sum_metric_family(text, "tessera_spec_draft_tokens_total");
  const std::optional<double> accepted =
      sum_metric_family(text, "tessera_spec_accepted_tokens_total");
  if (!draft && !accepted) return std::nullopt;
  return SpecCounters{draft.value_or(0.0), accepted.value_or(0.0)};
}

std::optional<SpecCounters> scrape_spec_counters(const std::string& url, double timeout_s) {
  const Result<HttpReply> reply = http_call(url, "GET", "/metrics", "", timeout_s);
  if (!reply.is_ok() || reply->status != 200) return std::nullopt;
  return parse_spec_counters(reply->body);
}

}  // namespace tessera::bench
