#include "tessera/bench/load_generator.h"

#include <gtest/gtest.h>

#include "tessera/bench/metrics.h"
#include "tessera/bench/null_backend.h"

namespace tessera::bench {
namespace load_generator_test {

constexpr int64_t kMs = 1'000'000;

InMemoryLibrary library(int n, int32_t out_tokens) {
  InMemoryLibrary lib;
  for (int i = 0; i < n; ++i) {
    QuerySample s;
    s.prompt = "p" + std::to_string(i);
    s.input_tokens = 3;
    s.max_output_tokens = out_tokens;
    lib.add(s);
  }
  return lib;
}

// A synchronous backend in virtual time: every query takes 10 ms to its first token and 10 ms
// more to its second and last; query `stall_id` first blocks the sender for `stall_ms`.
class StallingBackend final : public SystemUnderTest {
 public:
  StallingBackend(FakeClock* clock, uint64_t stall_id, int64_t stall_ms)
      : clock_(clock), stall_id_(stall_id), stall_ms_(stall_ms) {}
  nlohmann::json describe() const override { return {{"kind", "stalling"}}; }
  void issue(const Query& q, QueryObserver* obs) override {
    if (q.id == stall_id_) clock_->advance_ns(stall_ms_ * kMs);
    clock_->advance_ns(10 * kMs);
    obs->on_chunk(q.id, 1);
    clock_->advance_ns(10 * kMs);
    obs->on_chunk(q.id, 1);
    obs->on_complete(q.id, CompletionInfo{-1, -1});
  }

 private:
  FakeClock* clock_;
  uint64_t stall_id_;
  int64_t stall_ms_;
};

TEST(LoadGenerator, LatencyIsMeasuredFromTheScheduledTimeSoALateSenderCounts) {
  FakeClock clock(1'000 * kMs);
  FakeSleeper sleeper(&clock);
  StallingBackend sut(&clock, /*stall_id=*/3, /*stall_ms=*/500);
  const InMemoryLibrary lib = library(4, 2);
  LoadGenerator gen(&sut, &lib, &sleeper);
  TestSettings s;
  s.scenario = Scenario::kServer;
  s.arrivals = {ArrivalKind::kConstant, 10.0, 1.0};  // every 100 ms
  s.min_queries = 10;
  const RunResult run = *gen.run(s);
  ASSERT_EQ(run.records.size(), 10u);
  // Query 3 (scheduled at 300 ms) stalls its sender until 800 ms: it and every query scheduled
  // before the sender catches up are late; their latency includes the lateness.
  const int64_t expected_issue_ms[10] = {0, 100, 200, 300, 820, 840, 860, 880, 900, 920};
  for (int i = 0; i < 10; ++i) {
    SCOPED_TRACE(i);
    const QueryRecord& r = run.records[i];
    EXPECT_EQ(r.scheduled_ns, i * 100 * kMs);
    EXPECT_EQ(r.issued_ns, expected_issue_ms[i] * kMs);
    const QueryLatency q = query_latency(r);
    const double late_s = (expected_issue_ms[i] - i * 100) * 1e-3 + (i == 3 ? 0.5 : 0.0);
    EXPECT_NEAR(q.ttft_s, late_s + 0.010, 1e-9);
    EXPECT_NEAR(q.e2e_s, late_s + 0.020, 1e-9);
    EXPECT_NEAR(q.queue_s, (expected_issue_ms[i] - i * 100) * 1e-3, 1e-9);
  }
  const ServeMetrics m = compute_metrics(run, *parse_slo("ttft=100"));
  EXPECT_EQ(m.good, 4);  // queries 3..8 reach their first token more than 100 ms late
  EXPECT_NEAR(m.duration_s, 0.940, 1e-9);
  EXPECT_NEAR(m.queue.max, 420, 1e-6);
}

TEST(LoadGenerator, ClosedLoopRunsUntilMinimumCountAndDuration) {
  FakeClock clock;
  FakeSleeper sleeper(&clock);
  StallingBackend sut(&clock, ~uint64_t{0}, 0);
  const InMemoryLibrary lib = library(7, 2);
  LoadGenerator gen(&sut, &lib, &sleeper);
  TestSettings s;
  s.scenario = Scenario::kSingleStream;
  s.min_queries = 5;
  s.min_duration_s = 1.0;  // 20 ms a query: the duration, not the count, decides
  s.warmup_queries = 3;
  const RunResult run = *gen.run(s);
  ASSERT_EQ(run.measured_queries, 50);
  ASSERT_EQ(run.records.size(), 53u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(run.records[i].warmup);
  for (size_t i = 3; i < run.records.size(); ++i) {
    const QueryRecord& r = run.records[i];
    EXPECT_FALSE(r.warmup);
    // Each query is scheduled the moment its predecessor ended.
    EXPECT_EQ(r.scheduled_ns, static_cast<int64_t>(i - 3) * 20 * kMs);
    EXPECT_EQ(r.sample_index, (i - 3) % 7);
  }
  const ServeMetrics m = compute_metrics(run, Slo{});
  EXPECT_EQ(m.completed, 50);
  EXPECT_NEAR(m.duration_s, 1.0, 1e-9);
  EXPECT_EQ(m.peak_in_flight, 1);
}

// Fails queries by id: every failure is counted under its kind, never dropped.
class FlakyBackend final : public SystemUnderTest {
 public:
  nlohmann::json describe() const override { return {{"kind", "flaky"}}; }
  void issue(const Query& q, QueryObserver* obs) override {
    switch (q.id % 4) {
      case 0: obs->on_error(q.id, {ErrorKind::kHttpStatus, 503, "busy"}); break;
      case 1: obs->on_error(q.id, {ErrorKind::kTimeout, 0, "slow"}); break;
      case 2:
        obs->on_chunk(q.id, 1);
        obs->on_error(q.id, {ErrorKind::kBadStream, 0, "junk"});
        break;
      default:
        obs->on_chunk(q.id, 2);
        obs->on_complete(q.id, CompletionInfo{7, 2});
    }
  }
};

TEST(LoadGenerator, ErrorsAreClassifiedNeverDropped) {
  FlakyBackend sut;
  const InMemoryLibrary lib = library(3, 2);
  RealSleeper sleeper;
  LoadGenerator gen(&sut, &lib, &sleeper);
  TestSettings s;
  s.scenario = Scenario::kOffline;
  s.min_queries = 40;
  const ServeMetrics m = compute_metrics(*gen.run(s), Slo{});
  EXPECT_EQ(m.measured, 40);
  EXPECT_EQ(m.completed, 10);
  EXPECT_EQ(m.failed, 30);
  EXPECT_EQ(m.errors_by_kind.at("http_status"), 10);
  EXPECT_EQ(m.errors_by_kind.at("timeout"), 10);
  EXPECT_EQ(m.errors_by_kind.at("bad_stream"), 10);
  EXPECT_EQ(m.total_input_tokens, 70);  // from the backend's usage, not the sample's 3
  EXPECT_EQ(m.good, 10);
}

TEST(LoadGenerator, NullBackendStreamsManyQueriesConcurrently) {
  NullBackend sut(NullBackendOptions{0.002, 0.001, 1});
  const InMemoryLibrary lib = library(10, 5);
  RealSleeper sleeper;
  LoadGenerator gen(&sut, &lib, &sleeper);
  TestSettings s;
  s.scenario = Scenario::kConcurrency;
  s.concurrency = 64;
  s.min_queries = 512;
  int progress_calls = 0;
  s.on_progress = [&](const Progress&) { ++progress_calls; };
  const RunResult run = *gen.run(s);
  const ServeMetrics m = compute_metrics(run, Slo{});
  EXPECT_EQ(m.completed, run.measured_queries);
  EXPECT_GE(m.completed, 512);
  EXPECT_EQ(m.peak_in_flight, 64);
  EXPECT_EQ(m.total_output_tokens, 5 * m.completed);
  EXPECT_TRUE(m.output_tokens_exact);
  EXPECT_EQ(m.itl.n, static_cast<size_t>(4 * m.completed));
  EXPECT_GE(m.ttft.min, 2.0);  // the backend's 2 ms, never less
  EXPECT_GE(progress_calls, 2);
}

TEST(LoadGenerator, OpenLoopCapOnInFlightDelaysTheSender) {
  NullBackend sut(NullBackendOptions{0.005, 0.0, 1});
  const InMemoryLibrary lib = library(4, 1);
  RealSleeper sleeper;
  LoadGenerator gen(&sut, &lib, &sleeper);
  TestSettings s;
  s.scenario = Scenario::kOffline;
  s.concurrency = 4;
  s.min_queries = 12;
  const RunResult run = *gen.run(s);
  const ServeMetrics m = compute_metrics(run, Slo{});
  EXPECT_EQ(m.completed, 12);
  EXPECT_LE(m.peak_in_flight, 4);
  // The last four waited for two rounds of 5 ms: queueing the harness records.
  EXPECT_GE(run.records.back().queue_delay_s(), 0.009);
}

TEST(LoadGenerator, InvalidSettingsAreRefused) {
  FlakyBackend sut;
  const InMemoryLibrary lib = library(1, 1);
  RealSleeper sleeper;
  LoadGenerator gen(&sut, &lib, &sleeper);
  TestSettings s;
  s.scenario = Scenario::kConcurrency;
  s.concurrency = 0;
  EXPECT_EQ(gen.run(s).status().code(), ErrorCode::kInvalidArgument);
  s.scenario = Scenario::kServer;
  s.arrivals.rate = -1;
  EXPECT_EQ(gen.run(s).status().code(), ErrorCode::kInvalidArgument);
  const InMemoryLibrary empty;
  LoadGenerator gen2(&sut, &empty, &sleeper);
  EXPECT_FALSE(gen2.run(TestSettings{}).is_ok());
}

TEST(LoadGenerator, ServerScheduleCoversMinimumDuration) {
  TestSettings s;
  s.scenario = Scenario::kServer;
  s.arrivals = {ArrivalKind::kPoisson, 100.0, 1.0};
  s.min_queries = 10;
  s.min_duration_s = 2.0;
  const auto sched = draw_schedule(s, 5);
  EXPECT_GT(sched.size(), 150u);  // ~200 expected at 100/s over 2 s
  EXPECT_GE(sched.back().t_s, 1.9);
  EXPECT_EQ(sched[0].t_s, 0.0);
  EXPECT_EQ(sched[6].sample_index, 1u);
}

}  // namespace load_generator_test
}  // namespace tessera::bench
