#include "tessera/bench/metrics.h"

#include <gtest/gtest.h>

namespace tessera::bench {
namespace metrics_test {

constexpr int64_t kMs = 1'000'000;

// A successful query scheduled at `sched` ms whose chunks (one token each) arrive at `chunks` ms.
QueryRecord query(int64_t sched, std::vector<int64_t> chunks, int64_t issued = -1) {
  QueryRecord r;
  r.scheduled_ns = sched * kMs;
  r.issued_ns = (issued < 0 ? sched : issued) * kMs;
  for (int64_t c : chunks) {
    r.chunk_ns.push_back(c * kMs);
    r.chunk_tokens.push_back(1);
  }
  r.first_token_ns = r.chunk_ns.front();
  r.end_ns = r.chunk_ns.back();
  r.output_tokens = static_cast<int32_t>(chunks.size());
  r.output_tokens_exact = true;
  r.input_tokens = 10;
  r.ok = true;
  return r;
}

TEST(Metrics, PerQueryFormulas) {
  // Scheduled at 0, sent at 5 (late), first token at 100, then 130, 160, 220.
  const QueryRecord r = query(0, {100, 130, 160, 220}, 5);
  const QueryLatency q = query_latency(r);
  EXPECT_DOUBLE_EQ(q.ttft_s, 0.100);
  EXPECT_DOUBLE_EQ(q.e2e_s, 0.220);
  EXPECT_NEAR(q.tpot_s, 0.040, 1e-12);  // (220 - 100) / (4 - 1)
  EXPECT_DOUBLE_EQ(q.queue_s, 0.005);
  EXPECT_TRUE(std::isnan(query_latency(query(0, {50})).tpot_s));  // one token: no TPOT
}

TEST(Metrics, AggregatesThroughputPercentilesAndItl) {
  RunResult run;
  run.records.push_back(query(0, {100, 130, 160, 220}));
  run.records.push_back(query(100, {300, 310}));
  QueryRecord failed = query(200, {250});
  failed.ok = false;
  failed.error = QueryError{ErrorKind::kHttpStatus, 503, "overloaded"};
  run.records.push_back(failed);
  QueryRecord warm = query(-1000, {-900});
  warm.warmup = true;
  run.records.push_back(warm);
  run.duration_s = 0.5;
  const ServeMetrics m = compute_metrics(run, Slo{});
  EXPECT_EQ(m.measured, 3);
  EXPECT_EQ(m.completed, 2);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.errors_by_kind.at("http_status"), 1);
  EXPECT_EQ(m.total_output_tokens, 6);
  EXPECT_EQ(m.total_input_tokens, 20);
  EXPECT_DOUBLE_EQ(m.request_throughput, 4.0);
  EXPECT_DOUBLE_EQ(m.output_throughput, 12.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 52.0);
  // TTFTs 100 and 200 ms; ITL gaps 30, 30, 60, 10 ms.
  EXPECT_EQ(m.ttft.n, 2u);
  EXPECT_DOUBLE_EQ(m.ttft.mean, 150);
  EXPECT_DOUBLE_EQ(m.ttft.p[0], 150);  // p50
  EXPECT_DOUBLE_EQ(m.ttft.p[3], 199);  // p99: 100 + 0.99 * 100
  EXPECT_EQ(m.itl.n, 4u);
  EXPECT_DOUBLE_EQ(m.itl.median, 30);
  EXPECT_DOUBLE_EQ(m.itl.p[1], 51);    // p90 of {10,30,30,60}: rank 2.7 -> 30 + 0.7 * 30
  EXPECT_DOUBLE_EQ(m.e2el.max, 220);
  EXPECT_EQ(m.tpot.n, 2u);             // 40 ms and 10 ms
  EXPECT_DOUBLE_EQ(m.tpot.mean, 25);
  EXPECT_EQ(m.good, 2);                // no SLO: every completed query is good
  EXPECT_DOUBLE_EQ(m.request_goodput, 4.0);
  EXPECT_EQ(m.peak_in_flight, 3);  // at 200 ms all three are in flight
}

TEST(Metrics, GoodputCountsQueriesMeetingEverySlo) {
  RunResult run;
  run.records.push_back(query(0, {100, 130, 160, 220}));  // ttft 100, tpot 40, e2e 220
  run.records.push_back(query(0, {300, 310}));            // ttft 300, tpot 10, e2e 310
  run.records.push_back(query(0, {50}));                  // ttft 50, no tpot, e2e 50
  run.duration_s = 2.0;
  auto slo = [](const char* s) { return *parse_slo(s); };
  EXPECT_EQ(compute_metrics(run, slo("ttft=150")).good, 2);
  EXPECT_EQ(compute_metrics(run, slo("tpot=20")).good, 2);  // single-token query has no TPOT
  EXPECT_EQ(compute_metrics(run, slo("ttft=150,tpot=20")).good, 1);
  EXPECT_EQ(compute_metrics(run, slo("e2e=220")).good, 2);  // bounds are inclusive
  const ServeMetrics m = compute_metrics(run, slo("ttft=1000,tpot=100,e2e=1000"));
  EXPECT_EQ(m.good, 3);
  EXPECT_DOUBLE_EQ(m.request_goodput, 1.5);
  EXPECT_DOUBLE_EQ(compute_metrics(run, slo("ttft=60")).slo_attainment, 1.0 / 3.0);
}

TEST(Metrics, SloParsing) {
  const Slo s = *parse_slo("ttft=500,tpot=50.5,e2e=2000");
  EXPECT_EQ(*s.ttft_ms, 500);
  EXPECT_EQ(*s.tpot_ms, 50.5);
  EXPECT_EQ(*s.e2e_ms, 2000);
  EXPECT_TRUE(parse_slo("").value().empty());
  EXPECT_FALSE(parse_slo("ttft").is_ok());
  EXPECT_FALSE(parse_slo("ttft=abc").is_ok());
  EXPECT_FALSE(parse_slo("ttft=-1").is_ok());
  EXPECT_FALSE(parse_slo("latency=5").is_ok());
  EXPECT_EQ(format_slo(s), "ttft<=500ms tpot<=50.5ms e2e<=2000ms");
}

TEST(Metrics, EmptyDistributionIsZero) {
  const Distribution d = distribution_ms({});
  EXPECT_EQ(d.n, 0u);
  EXPECT_EQ(d.p[4], 0.0);
}

}  // namespace metrics_test
}  // namespace tessera::bench
