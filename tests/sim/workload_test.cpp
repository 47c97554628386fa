// Simulator workloads: ServeGen-derived streams over many models (per-window counts, ordering,
// determinism, scaling, memory), sampled and fixed lengths, and trace replay with Mooncake
// prefix sharing.
#include "tessera/sim/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tessera/bench/trace.h"
#include "tessera/sim/workload_lengths.h"
#include "tessera/sim/workload_schedule.h"
#include "tessera/sim/workload_servegen.h"
#include "tessera/sim/workload_trace.h"
#include "test_util.h"

namespace tessera::sim {
namespace {

constexpr int64_t kWindowNs = 600'000'000'000;

std::vector<SimRequest> drain(Workload& w) {
  std::vector<SimRequest> out;
  SimRequest r;
  while (w.next(r)) out.push_back(r);
  return out;
}

bool same(const SimRequest& a, const SimRequest& b) {
  return a.t_ns == b.t_ns && a.model == b.model && a.input_tokens == b.input_tokens &&
         a.output_tokens == b.output_tokens && a.prefix_tokens == b.prefix_tokens;
}

bool same(const std::vector<SimRequest>& a, const std::vector<SimRequest>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same(a[i], b[i])) return false;
  }
  return true;
}

std::unique_ptr<Workload> servegen(const ServeGenWorkloadOptions& o) {
  auto w = make_servegen_workload(o);
  EXPECT_TRUE(w.is_ok()) << w.status().to_string();
  return w.is_ok() ? std::move(w).value() : nullptr;
}

// Peak resident memory of this process, from /proc (0 where there is none).
int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// A ServeGen folder written by hand: two clients of two days each (288 windows), so the exact
// count of every window is known. Rates are chosen so rate x 600 is fractional.
class HandWrittenServeGen : public ::testing::Test {
 protected:
  // rate of client c's window w (trace windows, both days).
  static double rate(int c, int w) {
    const int in_day = w % 144;
    const int day = w / 144;
    if (c == 0) {
      if (in_day == 1) return day == 0 ? 2.0005 : 0.2505;  // 1200.3 / 150.3 requests
      if (in_day == 2) return day == 0 ? 0.5005 : 1.1005;  // 300.3 / 660.3
      if (in_day == 4) return 0.1;                         // 60, both days
      return 0.0;                                          // 0, 3, 5, ...: off
    }
    return in_day < 6 ? 0.05 * (in_day + 1) + 0.0001 * day : 0.0;
  }
  void SetUp() override {
    const auto folder = dir_.path() / "language" / "m-test";
    std::filesystem::create_directories(folder);
    for (int c = 0; c < 2; ++c) {
      std::ofstream f(folder / ("chunk-" + std::to_string(c) + "-trace.csv"));
      for (int w = 0; w < 288; ++w) {
        const double r = rate(c, w);
        if (r == 0.0) {
          f << 600 * w << ",0,0,,0,0\n";
        } else if (w % 2 == 0) {
          f << 600 * w << "," << r << ",2.0,Weibull,0.45,1.0\n";
        } else {
          f << 600 * w << "," << r << ",3.0,Gamma,0.1,10.0\n";
        }
      }
    }
    // Not a client: ignored.
    std::ofstream(folder / "README.txt") << "notes\n";
  }
  ServeGenWorkloadOptions options() const {
    ServeGenWorkloadOptions o;
    o.dir = dir_.path().string();
    o.n_models = 4;  // two copies of each client
    o.duration_s = 6 * 600.0;
    o.seed = 11;
    o.lengths.fixed_input_tokens = 300;
    o.lengths.fixed_output_tokens = 40;
    return o;
  }
  // The client and day of a model, from its source ("…/chunk-1 day 0").
  static std::pair<int, int> client_day(const WorkloadModel& m) {
    const auto chunk = m.source.find("chunk-");
    const auto day = m.source.rfind(" day ");
    return {std::stoi(m.source.substr(chunk + 6)), std::stoi(m.source.substr(day + 5))};
  }
  testing::TempDir dir_;
};

TEST_F(HandWrittenServeGen, EveryWindowHoldsItsRateTimesItsLength) {
  auto w = servegen(options());
  ASSERT_TRUE(w);
  ASSERT_EQ(w->models().size(), 4u);
  // Copies of one client replay different days of it.
  for (int m = 0; m < 2; ++m) {
    const auto [c0, d0] = client_day(w->models()[m]);
    const auto [c1, d1] = client_day(w->models()[m + 2]);
    EXPECT_EQ(c0, m);
    EXPECT_EQ(c1, m);
    EXPECT_NE(d0, d1) << w->models()[m].source << " vs " << w->models()[m + 2].source;
    EXPECT_NE(w->models()[m].source.find("m-test/chunk-"), std::string::npos);
  }
  const auto requests = drain(*w);
  std::vector<std::vector<int64_t>> count(4, std::vector<int64_t>(6, 0));
  for (const auto& r : requests) {
    ASSERT_GE(r.t_ns, 0);
    ASSERT_LT(r.t_ns, 6 * kWindowNs);
    ++count[r.model][r.t_ns / kWindowNs];
    EXPECT_EQ(r.input_tokens, 300);
    EXPECT_EQ(r.output_tokens, 40);
    EXPECT_EQ(r.prefix_tokens, 0);
  }
  for (int m = 0; m < 4; ++m) {
    const auto [c, day] = client_day(w->models()[m]);
    double expected_total = 0.0, peak = 0.0;
    for (int k = 0; k < 6; ++k) {
      // Stochastic rounding: exactly the floor or the ceiling; an off window gets none, and no
      // request leaks into a neighbouring window.
      const double expected = rate(c, day * 144 + k) * 600.0;
      EXPECT_GE(count[m][k], static_cast<int64_t>(std::floor(expected))) << m << " window " << k;
      EXPECT_LE(count[m][k], static_cast<int64_t>(std::ceil(expected))) << m << " window " << k;
      expected_total += expected;
      peak = std::max(peak, rate(c, day * 144 + k));
    }
    EXPECT_NEAR(w->models()[m].expected_requests, expected_total, 1e-6);
    EXPECT_DOUBLE_EQ(w->models()[m].peak_rps, peak);
    EXPECT_NEAR(w->models()[m].mean_rps, expected_total / 3600.0, 1e-9);
  }
  SimRequest r;
  EXPECT_FALSE(w->next(r)) << "stays at its end";
}

TEST_F(HandWrittenServeGen, OrderedAndDeterministic) {
  auto a = drain(*servegen(options()));
  auto b = drain(*servegen(options()));
  ASSERT_GT(a.size(), 2000u);
  EXPECT_TRUE(same(a, b)) << "same options and seed: the same stream";
  for (size_t i = 1; i < a.size(); ++i) {
    ASSERT_TRUE(a[i - 1].t_ns < a[i].t_ns ||
                (a[i - 1].t_ns == a[i].t_ns && a[i - 1].model <= a[i].model))
        << "request " << i;
  }
  auto o = options();
  o.seed = 12;
  EXPECT_FALSE(same(a, drain(*servegen(o)))) << "another seed: another stream";
}

TEST_F(HandWrittenServeGen, AModelsStreamDependsOnlyOnItselfAndTheCutIsAPrefix) {
  const auto full = drain(*servegen(options()));
  // Model 0 alone: the same requests as model 0 among four.
  auto o = options();
  o.n_models = 1;
  const auto alone = drain(*servegen(o));
  std::vector<SimRequest> model0;
  for (const auto& r : full) {
    if (r.model == 0) model0.push_back(r);
  }
  EXPECT_TRUE(same(alone, model0));
  // A duration that cuts window 1 in half: exactly the full stream's requests before the cut.
  o = options();
  o.duration_s = 900.0;
  auto cut_w = servegen(o);
  const auto [c, day] = client_day(cut_w->models()[0]);
  EXPECT_NEAR(cut_w->models()[0].expected_requests,
              rate(c, day * 144) * 600 + rate(c, day * 144 + 1) * 300, 1e-6)
      << "the cut window counts for its part";
  const auto cut = drain(*cut_w);
  std::vector<SimRequest> before;
  for (const auto& r : full) {
    if (r.t_ns < 900'000'000'000) before.push_back(r);
  }
  EXPECT_TRUE(same(cut, before));
}

TEST_F(HandWrittenServeGen, RateScaleAndPeakCap) {
  auto o = options();
  o.rate_scale = 3.0;
  o.max_peak_rps = 1.5;
  auto w = servegen(o);
  const auto requests = drain(*w);
  std::vector<std::vector<int64_t>> count(4, std::vector<int64_t>(6, 0));
  for (const auto& r : requests) ++count[r.model][r.t_ns / kWindowNs];
  for (int m = 0; m < 4; ++m) {
    const auto [c, day] = client_day(w->models()[m]);
    double peak = 0.0;
    for (int k = 0; k < 6; ++k) peak = std::max(peak, rate(c, day * 144 + k));
    // Scaled by 3, unless that would pass 1.5 req/s: then scaled so the peak is 1.5.
    const double factor = peak * 3.0 > 1.5 ? 1.5 / peak : 3.0;
    EXPECT_NEAR(w->models()[m].peak_rps, peak * factor, 1e-12) << m;
    EXPECT_LE(w->models()[m].peak_rps, 1.5 + 1e-12);
    for (int k = 0; k < 6; ++k) {
      const double expected = rate(c, day * 144 + k) * factor * 600.0;
      EXPECT_GE(count[m][k], static_cast<int64_t>(std::floor(expected))) << m << " window " << k;
      EXPECT_LE(count[m][k], static_cast<int64_t>(std::ceil(expected))) << m << " window " << k;
    }
  }
}

TEST_F(HandWrittenServeGen, RefusesBadOptions) {
  auto o = options();
  o.n_models = 0;
  EXPECT_EQ(make_servegen_workload(o).status().code(), ErrorCode::kInvalidArgument);
  o = options();
  o.duration_s = 0;
  EXPECT_EQ(make_servegen_workload(o).status().code(), ErrorCode::kInvalidArgument);
  o = options();
  o.rate_scale = -1;
  EXPECT_EQ(make_servegen_workload(o).status().code(), ErrorCode::kInvalidArgument);
  o = options();
  o.dir = dir_.file("missing");
  EXPECT_EQ(make_servegen_workload(o).status().code(), ErrorCode::kNotFound);
  testing::TempDir empty;
  o.dir = empty.path().string();
  auto r = make_servegen_workload(o);
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().message().find("chunk-N-trace.csv"), std::string::npos);
  o = options();
  o.lengths.fixed_output_tokens = 0;
  EXPECT_EQ(make_servegen_workload(o).status().code(), ErrorCode::kInvalidArgument);
}

// Gaps of Gamma shape 0.02 are so clumped that most of a window's requests land on the same
// nanosecond, often the window's first, across models too: ties must come by model index.
TEST(ServeGenWorkloadTest, TiesComeByModelIndex) {
  testing::TempDir dir;
  {
    std::ofstream f(dir.file("chunk-0-trace.csv"));
    for (int w = 0; w < 144; ++w) f << 600 * w << ",0.2,20.0,Gamma,0.02,250.0\n";
  }
  ServeGenWorkloadOptions o;
  o.dir = dir.path().string();
  o.n_models = 5;  // one client of one day: five copies of the same day, five seeds
  o.duration_s = 3 * 600.0;
  o.lengths.fixed_input_tokens = 1;
  o.lengths.fixed_output_tokens = 1;
  const auto r = drain(*servegen(o));
  ASSERT_EQ(r.size(), 5u * 3u * 120u);
  int64_t ties_across_models = 0;
  for (size_t i = 1; i < r.size(); ++i) {
    ASSERT_LE(r[i - 1].t_ns, r[i].t_ns) << i;
    if (r[i - 1].t_ns == r[i].t_ns) {
      ASSERT_LE(r[i - 1].model, r[i].model) << "tie at " << r[i].t_ns;
      ties_across_models += r[i - 1].model < r[i].model;
    }
  }
  EXPECT_GT(ties_across_models, 0) << "the test needs ties to test them";
}

TEST(SummarizeTest, CountsPerModelAndPeaks) {
  testing::TempDir dir;
  {
    std::ofstream f(dir.file("t.csv"));
    f << "arrived_at,num_prefill_tokens,num_decode_tokens\n";
    // Model 0 (round-robin: even lines) gets 3 requests in 0..600 s and 1 after; model 1 gets 4.
    f << "0,10,1\n1,20,2\n2,30,3\n3,40,4\n4,50,5\n5,60,6\n700,70,7\n701,80,8\n";
  }
  TraceWorkloadOptions o;
  o.path = dir.file("t.csv");
  o.n_models = 2;
  auto w = make_trace_workload(o);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  const auto s = summarize(**w);
  EXPECT_EQ(s.requests, 8);
  EXPECT_TRUE(s.ordered);
  EXPECT_EQ(s.first_t_ns, 0);
  EXPECT_EQ(s.last_t_ns, 701'000'000'000);
  EXPECT_EQ(s.input_tokens, 360);
  EXPECT_EQ(s.output_tokens, 36);
  EXPECT_EQ(s.per_model, (std::vector<int64_t>{4, 4}));
  EXPECT_DOUBLE_EQ(s.peak_rps[0], 3.0 / 600.0);
  EXPECT_DOUBLE_EQ(s.peak_rps[1], 3.0 / 600.0);
  EXPECT_DOUBLE_EQ((*w)->models()[0].peak_rps, 3.0 / 600.0);
  EXPECT_DOUBLE_EQ((*w)->models()[1].expected_requests, 4.0);
  EXPECT_NEAR(s.duration_s, 701.0, 1e-6);
}

// Mooncake hash ids on a hand-written trace: the exact prefix each request shares with an
// earlier request of its own model.
TEST(TraceWorkloadTest, MooncakePrefixTokensAreSharedLeadingBlocksOfTheSameModel) {
  testing::TempDir dir;
  {
    std::ofstream f(dir.file("m.jsonl"));
    const auto line = [&](int ms, int in, int out, const char* ids) {
      f << "{\"timestamp\": " << ms << ", \"input_length\": " << in
        << ", \"output_length\": " << out << ", \"hash_ids\": [" << ids << "]}\n";
    };
    line(0, 1200, 10, "1, 2, 3");
    line(0, 600, 5, "1, 2");
    line(1000, 1500, 7, "1, 2, 4");
    line(1000, 700, 7, "1, 2");
    line(2000, 1100, 3, "5, 2, 3");
    line(2000, 1300, 3, "1, 9, 3");
    line(3000, 1536, 0, "1, 2, 3");
  }
  TraceWorkloadOptions o;
  o.path = dir.file("m.jsonl");
  o.n_models = 2;  // round-robin: lines 1, 3, 5, 7 to model 0; lines 2, 4, 6 to model 1
  auto w = make_trace_workload(o);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  auto r = drain(**w);
  ASSERT_EQ(r.size(), 7u);
  const std::vector<int32_t> model = {0, 1, 0, 1, 0, 1, 0};
  const std::vector<int64_t> t_ns = {0, 0, 1'000'000'000, 1'000'000'000, 2'000'000'000,
                                     2'000'000'000, 3'000'000'000};
  // 0: new. 1: model 1's first (model 0's blocks do not count). 2: [1, 2] of line 1 -> 1024.
  // 3: [1, 2] of line 2 -> 1024, clipped to its 700 tokens. 4: block 5 is new, so nothing,
  // though 2 and 3 were seen after other blocks. 5: [1] of line 2 -> 512. 6: all of line 1 -> 1536.
  const std::vector<int32_t> prefix = {0, 0, 1024, 700, 0, 512, 1536};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].model, model[i]) << i;
    EXPECT_EQ(r[i].t_ns, t_ns[i]) << i;
    EXPECT_EQ(r[i].prefix_tokens, prefix[i]) << i;
  }
  EXPECT_EQ(r[6].output_tokens, 1) << "a 0-token output is raised to 1";

  // One model: every earlier request counts. Clipped at 1000 input tokens, prefixes follow.
  o.n_models = 1;
  o.max_input_tokens = 1000;
  o.time_scale = 2.0;
  w = make_trace_workload(o);
  ASSERT_TRUE(w.is_ok());
  r = drain(**w);
  ASSERT_EQ(r.size(), 7u);
  const std::vector<int32_t> prefix1 = {0, 600, 1000, 700, 0, 512, 1000};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].prefix_tokens, prefix1[i]) << i;
    EXPECT_LE(r[i].input_tokens, 1000);
    EXPECT_EQ(r[i].t_ns, t_ns[i] / 2) << "time_scale 2 halves times";
  }

  // max_requests reads the first lines; duration_s keeps arrivals before it.
  o = TraceWorkloadOptions{};
  o.path = dir.file("m.jsonl");
  o.max_requests = 3;
  EXPECT_EQ(summarize(**make_trace_workload(o)).requests, 3);
  o.max_requests = 0;
  o.duration_s = 1.5;
  auto cut = make_trace_workload(o);
  ASSERT_TRUE(cut.is_ok());
  EXPECT_DOUBLE_EQ((*cut)->duration_s(), 1.5);
  EXPECT_EQ(summarize(**cut).requests, 4);
}

// The schedule `bench fleet --arrivals-out` writes is replayed exactly: models in order of first
// appearance, times and lengths as written; bad lines are refused naming the line.
TEST(ScheduleWorkloadTest, ReplaysTheScheduleExactly) {
  testing::TempDir dir;
  {
    std::ofstream f(dir.file("s.csv"));
    f << "model,t_s,input_tokens,output_tokens\n"
      << "beta,0.5,64,16\n"
      << "alpha,0.5,32,8\n"
      << "beta,1.25,64,16\n"
      << "alpha,700.0,10,2\n";
  }
  auto w = make_schedule_workload(dir.file("s.csv"));
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ((*w)->models().size(), 2u);
  EXPECT_EQ((*w)->models()[0].name, "beta");
  EXPECT_EQ((*w)->models()[1].name, "alpha");
  EXPECT_DOUBLE_EQ((*w)->duration_s(), 701.0);
  EXPECT_NEAR((*w)->models()[0].peak_rps, 2.0 / 600.0, 1e-12);
  const auto r = drain(**w);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].model, 0);
  EXPECT_EQ(r[0].t_ns, 500'000'000);
  EXPECT_EQ(r[1].model, 1);
  EXPECT_EQ(r[1].input_tokens, 32);
  EXPECT_EQ(r[2].t_ns, 1'250'000'000);
  EXPECT_EQ(r[3].output_tokens, 2);
  EXPECT_EQ(r[3].t_ns, 700'000'000'000);
  for (const char* bad : {"a,1,2\n", "a,x,2,3\n", "a,1,0,3\n", "a,5,2,3\na,4,2,3\n"}) {
    std::ofstream(dir.file("bad.csv")) << bad;
    auto b = make_schedule_workload(dir.file("bad.csv"));
    ASSERT_FALSE(b.is_ok()) << bad;
    EXPECT_NE(b.status().message().find("bad.csv:"), std::string::npos) << b.status().message();
  }
  EXPECT_EQ(make_schedule_workload(dir.file("missing.csv")).status().code(), ErrorCode::kNotFound);
}

TEST(TraceWorkloadTest, RefusesBadOptions) {
  TraceWorkloadOptions o;
  o.path = "/nonexistent/trace.csv";
  o.format = "azure";
  EXPECT_EQ(make_trace_workload(o).status().code(), ErrorCode::kNotFound);
  o.format = "parquet";
  EXPECT_EQ(make_trace_workload(o).status().code(), ErrorCode::kInvalidArgument);
  o.format = "azure";
  o.time_scale = 0;
  EXPECT_EQ(make_trace_workload(o).status().code(), ErrorCode::kInvalidArgument);
  o.time_scale = 1;
  o.n_models = 0;
  EXPECT_EQ(make_trace_workload(o).status().code(), ErrorCode::kInvalidArgument);
}

TEST(LengthSamplerTest, FixedAndClipped) {
  LengthSource s;
  s.fixed_input_tokens = 2000;
  s.fixed_output_tokens = 50;
  s.max_input_tokens = 1024;
  auto sampler = LengthSampler::make(s);
  ASSERT_TRUE(sampler.is_ok()) << sampler.status().to_string();
  Rng rng(1);
  const RequestLengths l = sampler->draw(rng);
  EXPECT_EQ(l.input_tokens, 1024);
  EXPECT_EQ(l.output_tokens, 50);
  s.max_input_tokens = -1;
  EXPECT_EQ(LengthSampler::make(s).status().code(), ErrorCode::kInvalidArgument);
  s = LengthSource{};
  s.trace_path = "/nonexistent/AzureLLMInferenceTrace_code.csv";
  EXPECT_EQ(LengthSampler::make(s).status().code(), ErrorCode::kNotFound);
}

TEST(LengthSamplerTest, DrawsRecordedPairsFromAzure) {
  TS_SKIP_WITHOUT_SHARED(path, "traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv");
  auto entries = bench::load_trace(path.string(), bench::TraceFormat::kAzure);
  ASSERT_TRUE(entries.is_ok());
  std::set<std::pair<int32_t, int32_t>> recorded;
  double mean_in = 0.0;
  for (const auto& e : *entries) {
    const RequestLengths c = clip_lengths(e.input_tokens, e.output_tokens, 0, 0);
    recorded.insert({c.input_tokens, c.output_tokens});
    mean_in += c.input_tokens;
  }
  mean_in /= static_cast<double>(entries->size());
  LengthSource s;
  s.trace_path = path.string();
  auto sampler = LengthSampler::make(s);
  ASSERT_TRUE(sampler.is_ok()) << sampler.status().to_string();
  EXPECT_NE(sampler->describe().find("19366 pairs"), std::string::npos) << sampler->describe();
  EXPECT_NEAR(sampler->mean_input_tokens(), mean_in, 1e-6);
  Rng a(5), b(5);
  double sum_in = 0.0;
  constexpr int kDraws = 200'000;
  for (int i = 0; i < kDraws; ++i) {
    const RequestLengths l = sampler->draw(a);
    const RequestLengths m = sampler->draw(b);
    ASSERT_EQ(l.input_tokens, m.input_tokens) << "seeded";
    ASSERT_TRUE(recorded.count({l.input_tokens, l.output_tokens})) << "a pair from the trace";
    sum_in += l.input_tokens;
  }
  EXPECT_NEAR(sum_in / kDraws, mean_in, 0.03 * mean_in) << "sampled uniformly";

  s.max_input_tokens = 512;
  s.max_output_tokens = 64;
  sampler = LengthSampler::make(s);
  ASSERT_TRUE(sampler.is_ok());
  for (int i = 0; i < 10'000; ++i) {
    const RequestLengths l = sampler->draw(a);
    ASSERT_LE(l.input_tokens, 512);
    ASSERT_LE(l.output_tokens, 64);
    ASSERT_GE(l.output_tokens, 1);
  }
}

TEST(TraceWorkloadTest, AzureSplitOverModels) {
  TS_SKIP_WITHOUT_SHARED(path, "traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv");
  TraceWorkloadOptions o;
  o.path = path.string();
  o.n_models = 3;
  auto rr = make_trace_workload(o);
  ASSERT_TRUE(rr.is_ok()) << rr.status().to_string();
  auto s = summarize(**rr);
  EXPECT_EQ(s.requests, 8819);
  EXPECT_TRUE(s.ordered);
  EXPECT_EQ(s.prefix_tokens, 0) << "no hash ids, no prefixes";
  for (const auto n : s.per_model) EXPECT_NEAR(n, 8819 / 3.0, 1.0) << "round-robin";
  o.assignment = TraceAssignment::kSeeded;
  o.seed = 3;
  auto a = drain(**make_trace_workload(o));
  EXPECT_TRUE(same(a, drain(**make_trace_workload(o))));
  o.seed = 4;
  EXPECT_FALSE(same(a, drain(**make_trace_workload(o))));
}

TEST(TraceWorkloadTest, MooncakeConversationHasPrefixHits) {
  TS_SKIP_WITHOUT_SHARED(path, "traces/mooncake/conversation_trace.jsonl");
  TraceWorkloadOptions o;
  o.path = path.string();
  auto one = make_trace_workload(o);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  const auto s1 = summarize(**one);
  EXPECT_TRUE(s1.ordered);
  EXPECT_GT(s1.prefix_tokens, s1.input_tokens / 10) << "a conversation trace reuses prefixes";
  EXPECT_LT(s1.prefix_tokens, s1.input_tokens);
  o.n_models = 8;
  const auto s8 = summarize(**make_trace_workload(o));
  EXPECT_EQ(s8.requests, s1.requests);
  EXPECT_LT(s8.prefix_tokens, s1.prefix_tokens) << "split over models, fewer hits";
}

// The published clients, a full day: every model's count is its windows' rates x 600 up to the
// rounding of each window, and no 10-minute window holds more than its rate allows.
TEST(ServeGenWorkloadTest, RealClientsFollowTheirWindows) {
  TS_SKIP_WITHOUT_SHARED(root, "traces/servegen");
  ServeGenWorkloadOptions o;
  o.dir = root.string();
  o.n_models = 1000;
  o.rate_scale = 2e-3;
  o.seed = 3;
  auto w = servegen(o);
  ASSERT_TRUE(w);
  // Copies of one client (422 of them under the root) replay different days.
  EXPECT_EQ(w->models()[0].source.substr(0, w->models()[0].source.find(" day ")),
            w->models()[422].source.substr(0, w->models()[422].source.find(" day ")));
  EXPECT_NE(w->models()[0].source, w->models()[422].source);
  EXPECT_EQ(w->models()[0].source.rfind("servegen/", 0), 0u) << w->models()[0].source;
  const auto s = summarize(*w);
  EXPECT_TRUE(s.ordered);
  EXPECT_GE(s.first_t_ns, 0);
  EXPECT_LT(s.last_t_ns, 86'400'000'000'000);
  double expected = 0.0;
  for (size_t m = 0; m < w->models().size(); ++m) {
    const WorkloadModel& model = w->models()[m];
    expected += model.expected_requests;
    // Each of 144 windows rounds up or down at random: a deviation of sd <= sqrt(144 / 4) = 6.
    EXPECT_NEAR(static_cast<double>(s.per_model[m]), model.expected_requests, 31.0) << model.source;
    EXPECT_LE(s.peak_rps[m], model.peak_rps + 1.0 / 600.0 + 1e-12) << model.source;
  }
  EXPECT_NEAR(static_cast<double>(s.requests), expected, 5.0 * std::sqrt(expected));
  std::printf("servegen 1000 models x 24 h: %lld requests (%.0f expected)\n",
              static_cast<long long>(s.requests), expected);
}

// Drains a many-model day and reports speed and peak memory. rate_scale is set so the stream
// holds about `target` requests.
void drain_at_scale(int64_t n_models, double duration_s, double target) {
  TS_SKIP_WITHOUT_SHARED(root, "traces/servegen");
  ServeGenWorkloadOptions o;
  o.dir = root.string();
  o.n_models = n_models;
  o.duration_s = duration_s;
  o.seed = 1;
  const auto azure = testing::shared_file("traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv");
  if (!azure.empty()) o.lengths.trace_path = azure.string();
  const auto t0 = std::chrono::steady_clock::now();
  double unscaled = 0.0;
  {
    auto probe = servegen(o);
    ASSERT_TRUE(probe);
    for (const auto& m : probe->models()) unscaled += m.expected_requests;
  }
  o.rate_scale = target / unscaled;
  auto w = servegen(o);
  ASSERT_TRUE(w);
  const auto t1 = std::chrono::steady_clock::now();
  double expected = 0.0, peak_sum = 0.0;
  for (const auto& m : w->models()) {
    expected += m.expected_requests;
    peak_sum += m.peak_rps;
  }
  int64_t n = 0;
  SimRequest r, prev;
  bool ordered = true;
  while (w->next(r)) {
    if (n > 0 && (r.t_ns < prev.t_ns || (r.t_ns == prev.t_ns && r.model < prev.model))) {
      ordered = false;
    }
    prev = r;
    ++n;
  }
  const auto t2 = std::chrono::steady_clock::now();
  const double setup_s = std::chrono::duration<double>(t1 - t0).count();
  const double drain_s = std::chrono::duration<double>(t2 - t1).count();
  const double rss_gib = static_cast<double>(peak_rss_bytes()) / (1 << 30);
  std::printf("%s\n", w->describe().c_str());
  std::printf("%lld models x %.0f h: %lld requests (%.0f expected; sum of peaks %.0f req/s), "
              "setup %.2f s (twice: probe + real), drain %.2f s = %.2f M requests/s, "
              "peak RSS %.0f MiB\n",
              static_cast<long long>(n_models), duration_s / 3600, static_cast<long long>(n),
              expected, peak_sum, setup_s, drain_s, static_cast<double>(n) / drain_s / 1e6,
              rss_gib * 1024);
  EXPECT_TRUE(ordered);
  EXPECT_NEAR(static_cast<double>(n), expected, 0.02 * expected + 100.0);
  EXPECT_LT(rss_gib, 4.0);
}

TEST(ServeGenWorkloadTest, TenThousandModelsForSixHours) {
  drain_at_scale(10'000, 6 * 3600.0, 1.5e6);
}

// 100,000 models x 24 h, ~30 M requests: set TESSERA_SIM_BIG=1 (about a minute with the build's
// optimizations; much longer under sanitizers).
TEST(ServeGenWorkloadTest, HundredThousandModelsForADay) {
  const char* big = std::getenv("TESSERA_SIM_BIG");
  if (big == nullptr || std::string(big) != "1") {
    GTEST_SKIP() << "the 100,000-model day runs with TESSERA_SIM_BIG=1";
  }
  drain_at_scale(100'000, 86400.0, 30e6);
}

}  // namespace
}  // namespace tessera::sim
