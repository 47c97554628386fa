#include "tessera/serve/metrics.h"

#include "tessera/serve/serving_metrics.h"

#include <gtest/gtest.h>

#include <thread>

namespace tessera::serve {
namespace metrics_test {

TEST(Metrics, RendersExpositionFormat) {
  MetricsRegistry r;
  r.counter("req_total", "Requests\nby code", {{"code", "200"}, {"path", "a\"b\\c"}}).inc(2);
  r.counter("req_total", "Requests\nby code", {{"path", "a\"b\\c"}, {"code", "200"}}).inc();  // same set
  r.gauge("depth", "Queue depth").set(3.5);
  auto& h = r.histogram("lat_seconds", "Latency", {0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1);  // le is inclusive
  h.observe(5.0);
  EXPECT_EQ(r.render(),
            "# HELP depth Queue depth\n# TYPE depth gauge\ndepth 3.5\n"
            "# HELP lat_seconds Latency\n# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{le=\"0.1\"} 2\nlat_seconds_bucket{le=\"1\"} 2\n"
            "lat_seconds_bucket{le=\"+Inf\"} 3\nlat_seconds_sum 5.15\nlat_seconds_count 3\n"
            "# HELP req_total Requests\\nby code\n# TYPE req_total counter\n"
            "req_total{code=\"200\",path=\"a\\\"b\\\\c\"} 3\n");
}

TEST(Metrics, CountersIgnoreNegativeAndAreThreadSafe) {
  MetricsRegistry r;
  auto& c = r.counter("c_total", "c");
  c.inc(-5);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        r.histogram("h", "h", {1.0}).observe(0.5);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(r.histogram("h", "h", {1.0}).bucket_counts()[0], 40000u);
}

// Speculation counters are counters: they advance by what the engine counted since the last
// scrape, and a new engine (stats back at zero) adds all of its own.
TEST(ServingMetrics, SpeculationCountersAdvanceByDeltas) {
  auto reg = std::make_shared<MetricsRegistry>();
  ServingMetrics m(reg);
  engine::EngineStats s;
  s.spec_draft_tokens = 10;
  s.spec_accepted_tokens = 7;
  s.spec_accepted_histogram[0] = 1;
  s.spec_accepted_histogram[3] = 2;
  m.update_engine("a", s);
  m.update_engine("a", s);  // nothing new
  const auto& drafts = reg->counter("tessera_spec_draft_tokens_total", "", {{"model", "a"}});
  const auto& accepted = reg->counter("tessera_spec_accepted_tokens_total", "", {{"model", "a"}});
  EXPECT_EQ(drafts.value(), 10);
  EXPECT_EQ(accepted.value(), 7);
  s.spec_draft_tokens = 14;
  s.spec_accepted_tokens = 8;
  s.spec_accepted_histogram[1] = 1;
  m.update_engine("a", s);
  EXPECT_EQ(drafts.value(), 14);
  EXPECT_EQ(accepted.value(), 8);
  engine::EngineStats fresh;  // a resumed model's new engine
  fresh.spec_draft_tokens = 3;
  fresh.spec_accepted_tokens = 3;
  fresh.spec_accepted_histogram[3] = 1;
  m.update_engine("a", fresh);
  EXPECT_EQ(drafts.value(), 17);
  EXPECT_EQ(accepted.value(), 11);
  std::vector<double> bounds;
  for (int i = 0; i <= engine::kMaxDraftTokens; ++i) bounds.push_back(i);
  const auto counts = reg->histogram("tessera_spec_accepted_per_step", "", bounds, {{"model", "a"}})
                          .bucket_counts();
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(counts[1], 1u);
  EXPECT_EQ(counts[3], 3u);
  EXPECT_NE(reg->render().find("# TYPE tessera_spec_draft_tokens_total counter"), std::string::npos);
}

// Structured output's constraint time and tokens: counters in seconds and tokens, advanced by
// deltas, zero-valued (but present) for an engine that never ran a constrained request.
TEST(ServingMetrics, ConstraintCountersAdvanceByDeltas) {
  auto reg = std::make_shared<MetricsRegistry>();
  ServingMetrics m(reg);
  engine::EngineStats s;
  m.update_engine("a", s);
  const auto& secs = reg->counter("tessera_constraint_seconds_total", "", {{"model", "a"}});
  const auto& toks = reg->counter("tessera_constrained_tokens_total", "", {{"model", "a"}});
  EXPECT_EQ(secs.value(), 0);
  EXPECT_EQ(toks.value(), 0);
  s.constraint_ns = 3'000'000;
  s.constrained_tokens = 40;
  m.update_engine("a", s);
  m.update_engine("a", s);  // nothing new
  EXPECT_DOUBLE_EQ(secs.value(), 0.003);
  EXPECT_EQ(toks.value(), 40);
  engine::EngineStats fresh;  // a resumed model's new engine
  fresh.constraint_ns = 1'000'000;
  fresh.constrained_tokens = 10;
  m.update_engine("a", fresh);
  EXPECT_DOUBLE_EQ(secs.value(), 0.004);
  EXPECT_EQ(toks.value(), 50);
  EXPECT_NE(reg->render().find("# TYPE tessera_constraint_seconds_total counter"), std::string::npos);
}

TEST(ServingMetrics, PreemptionsAreACounterAdvancedByDeltas) {
  auto reg = std::make_shared<MetricsRegistry>();
  ServingMetrics m(reg);
  engine::EngineStats s;
  s.preemptions = 4;
  m.update_engine("a", s);
  m.update_engine("a", s);
  const auto& c = reg->counter("tessera_preemptions_total", "", {{"model", "a"}});
  EXPECT_EQ(c.value(), 4);
  s.preemptions = 6;
  m.update_engine("a", s);
  EXPECT_EQ(c.value(), 6);
  engine::EngineStats fresh;  // a resumed model's new engine
  fresh.preemptions = 1;
  m.update_engine("a", fresh);
  EXPECT_EQ(c.value(), 7);
  EXPECT_NE(reg->render().find("# TYPE tessera_preemptions_total counter"), std::string::npos);
}

TEST(Metrics, FormatsSpecialValues) {
  EXPECT_EQ(format_metric_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_metric_value(0.25), "0.25");
  EXPECT_EQ(format_metric_value(1e21), "1e+21");
}

}  // namespace metrics_test
}  // namespace tessera::serve
