#include "tessera/bench/constraint_counters.h"

#include "tessera/bench/http_call.h"
#include "tessera/bench/metric_sums.h"

namespace tessera::bench {

ConstraintCounters operator-(const ConstraintCounters& after, const ConstraintCounters& before) {
  return {after.seconds - before.seconds, after.tokens - before.tokens};
}

std::optional<ConstraintCounters> parse_constraint_counters(std::string_view text) {
  const std::optional<double> s = sum_metric_family(text, "tessera_constraint_seconds_total");
  const std::optional<double> n = sum_metric_family(text, "tessera_constrained_tokens_total");
  if (!s && !n) return std::nullopt;
  return ConstraintCounters{s.value_or(0.0), n.value_or(0.0)};
}

std::optional<ConstraintCounters> scrape_constraint_counters(const std::string& url,
                                                             double timeout_s) {
  const Result<HttpReply> reply = http_call(url, "GET", "/metrics", "", timeout_s);
  if (!reply.is_ok() || reply->status != 200) return std::nullopt;
  return parse_constraint_counters(reply->body);
}

}  // namespace tessera::bench
