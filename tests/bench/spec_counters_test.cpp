#include "tessera/bench/spec_counters.h"

#include <gtest/gtest.h>

namespace tessera::bench {
namespace spec_counters_test {

TEST(SpecCounters, SumsBothFamiliesOverModels) {
  const std::string text =
      "# HELP tessera_spec_draft_tokens_total Speculative draft tokens verified\n"
      "# TYPE tessera_spec_draft_tokens_total counter\n"
      "tessera_spec_draft_tokens_total{model=\"a\"} 10\n"
      "tessera_spec_draft_tokens_total{model=\"b\"} 30\n"
      "tessera_spec_accepted_tokens_total{model=\"a\"} 7\n"
      "tessera_spec_accepted_tokens_total{model=\"b\"} 13\n"
      "tessera_spec_draft_tokens_total_other 99\n"
      "tessera_generation_tokens_total{model=\"a\"} 500\n";
  const auto c = parse_spec_counters(text);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->draft_tokens, 40);
  EXPECT_EQ(c->accepted_tokens, 20);
  EXPECT_DOUBLE_EQ(c->acceptance(), 0.5);
}

TEST(SpecCounters, AbsentOrMalformedGivesNothing) {
  EXPECT_FALSE(parse_spec_counters("").has_value());
  EXPECT_FALSE(parse_spec_counters("vllm:num_requests_running 3\n").has_value());
  EXPECT_FALSE(parse_spec_counters("tessera_spec_draft_tokens_total{model=\"a\"} x1\n").has_value());
  EXPECT_FALSE(scrape_spec_counters("http://127.0.0.1:1", 0.5).has_value());  // nothing listens
}

}  // namespace spec_counters_test
}  // namespace tessera::bench
