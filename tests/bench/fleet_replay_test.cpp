// ServeGen client parsing and arrivals, and a small fleet replay under each idle policy.
#include "tessera/bench/fleet_replay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tessera/bench/servegen.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::bench {
namespace fleet_replay_test {

TEST(ServeGenTest, ParsesWindowsAndRefusesCorruptLines) {
  testing::TempDir dir;
  {
    std::ofstream f(dir.file("c.csv"));
    f << "0,0,0,,0,0\n600,2.5,1.2,Gamma,0.7,0.57\n1200,1.0,0.9,Weibull,1.1,1.03\n";
  }
  auto w = load_servegen_client(dir.file("c.csv"));
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->size(), 3u);
  EXPECT_EQ((*w)[1].distribution, "Gamma");
  EXPECT_DOUBLE_EQ((*w)[1].rate_rps, 2.5);
  EXPECT_DOUBLE_EQ((*w)[2].shape, 1.1);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"0,1,1,Gamma,1\n", "6 columns"},
      {"0,x,1,Gamma,1,1\n", "numbers"},
      {"0,-1,1,Gamma,1,1\n", "negative"},
      {"0,1,1,Pareto,1,1\n", "unknown distribution"},
      {"0,1,1,Gamma,0,1\n", "positive shape"},
  };
  for (const auto& [text, want] : bad) {
    {
      std::ofstream f(dir.file("bad.csv"));
      f << text;
    }
    auto r = load_servegen_client(dir.file("bad.csv"));
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(load_servegen_client(dir.file("missing.csv")).status().code(), ErrorCode::kNotFound);
}

TEST(ServeGenTest, ArrivalsFollowTheWindowsRescaledToThePeak) {
  // Window 0 off, window 1 at the peak rate, window 2 at a quarter of it, window 3 off.
  std::vector<ServeGenWindow> w(4);
  for (int i = 0; i < 4; ++i) w[i].start_s = 600.0 * i;
  w[1] = {600, 40.0, "Gamma", 0.5, 0.05};
  w[2] = {1200, 10.0, "Weibull", 0.8, 0.1};
  ServeGenReplayOptions o;
  o.n_windows = 4;
  o.time_scale = 6.0;   // a window lasts 100 replay seconds
  o.peak_rps = 20.0;    // so window 1 runs at 20/s, window 2 at 5/s
  o.seed = 7;
  const auto t = servegen_arrivals(w, o);
  int64_t n1 = 0, n2 = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i > 0) {
      ASSERT_LE(t[i - 1], t[i]);
    }
    ASSERT_GE(t[i], 100.0) << "no traffic in window 0";
    ASSERT_LT(t[i], 300.0) << "no traffic in window 3";
    (t[i] < 200.0 ? n1 : n2) += 1;
  }
  EXPECT_NEAR(static_cast<double>(n1), 2000.0, 300.0);
  EXPECT_NEAR(static_cast<double>(n2), 500.0, 120.0);
  EXPECT_EQ(servegen_arrivals(w, o), t) << "seeded: reproducible";
  EXPECT_DOUBLE_EQ(servegen_span_requests(w, o), (40.0 + 10.0) * 600.0);
  o.first_window = 3;
  o.n_windows = 1;
  EXPECT_TRUE(servegen_arrivals(w, o).empty());
}

// Two tiny models: one busy at the start and the end, one with a single early request. Always-on
// holds both the whole time; keep-alive suspends the idle one (fewer memory-seconds) and pays a
// cold start when the busy one comes back; every request finishes either way.
TEST(FleetReplayTest, KeepAliveHoldsLessMemoryThanAlwaysOnAndLosesNoRequest) {
  testing::TempDir dir;
  std::vector<FleetReplayModel> models;
  for (int i = 0; i < 2; ++i) {
    model::SynthOptions so;
    so.shape = *model::find_synth_shape("tiny");
    so.dtype = kernels::DType::kQ8_0;
    so.seed = 3 + i;
    const std::string path = dir.file("m" + std::to_string(i) + ".gguf");
    ASSERT_TRUE(model::write_synthetic_model(so, path).is_ok());
    FleetReplayModel m;
    m.spec.name = "m" + std::to_string(i);
    m.spec.path = path;
    m.spec.engine.ctx_size = 64;
    m.spec.engine.max_running = 2;
    models.push_back(std::move(m));
  }
  models[0].arrivals_s = {0.0, 0.05, 0.1, 1.2, 1.25};
  models[1].arrivals_s = {0.02};
  FleetReplayOptions o;
  o.models = models;
  o.threads = 1;
  o.prompt_tokens = 4;
  o.max_tokens = 2;
  o.keep_alive_s = 0.3;
  o.tail_s = 0.2;
  o.ttft_slo_s = 5.0;
  o.policy = "always-on";
  auto on = run_fleet_replay(o);
  ASSERT_TRUE(on.is_ok()) << on.status().to_string();
  o.policy = "fixed";
  auto fixed = run_fleet_replay(o);
  ASSERT_TRUE(fixed.is_ok()) << fixed.status().to_string();
  for (const auto* r : {&*on, &*fixed}) {
    EXPECT_EQ(r->requests, 6) << r->policy;
    EXPECT_EQ(r->errors, 0) << r->policy;
    EXPECT_EQ(r->slo_met, 6) << r->policy;
    EXPECT_GT(r->memory_gb_s, 0.0) << r->policy;
    EXPECT_GE(r->duration_s, 1.45) << r->policy;
  }
  EXPECT_EQ(on->cold_starts, 0);
  EXPECT_GE(fixed->cold_starts, 1);  // m0 was suspended in its 1.1 s gap
  // Every request's outcome, in arrival order; the device's account of the iterations (a prompt
  // iteration per request at least, decode-only ones for the second token); the resume timed.
  for (const auto* r : {&*on, &*fixed}) {
    ASSERT_EQ(r->requests_log.size(), 6u) << r->policy;
    int64_t cold = 0;
    for (size_t i = 0; i < r->requests_log.size(); ++i) {
      EXPECT_GT(r->requests_log[i].ttft_s, 0.0);
      if (i > 0) {
        EXPECT_GE(r->requests_log[i].t_s, r->requests_log[i - 1].t_s);
      }
      cold += r->requests_log[i].cold ? 1 : 0;
    }
    EXPECT_EQ(cold, r->cold_starts) << r->policy;  // the log's flags are the controller's count
    int64_t prefill = 0, decode_rows = 0;
    double held = 0.0;
    for (const auto& m : r->models) {
      prefill += m.prefill_grants;
      decode_rows += m.decode_rows;
      held += m.prefill_held_s + m.decode_held_s;
      EXPECT_GE(m.device_busy_s, 0.0);
    }
    EXPECT_GE(prefill, 6) << r->policy;
    EXPECT_GE(decode_rows, 1) << r->policy;
    EXPECT_GT(held, 0.0) << r->policy;
  }
  int64_t resumes = 0;
  for (const auto& m : fixed->models) {
    resumes += m.resumes;
    if (m.resumes > 0) {
      EXPECT_GT(m.mean_resume_s, 0.0) << m.name;
    }
    if (m.suspends > 0) {
      EXPECT_GT(m.mean_suspend_s, 0.0) << m.name;
    }
  }
  EXPECT_GE(resumes, 1);
  // A warm-up request per model is served before the clock starts and is not counted.
  o.policy = "always-on";
  o.warmup = true;
  auto warm = run_fleet_replay(o);
  ASSERT_TRUE(warm.is_ok()) << warm.status().to_string();
  EXPECT_EQ(warm->requests, 6);
  int64_t warm_prefill = 0;
  for (const auto& m : warm->models) warm_prefill += m.prefill_grants;
  EXPECT_GE(warm_prefill, 6);
  EXPECT_LE(warm_prefill, 6 * 4);  // prompts of 4 tokens: at most one iteration per token
  o.warmup = false;
  EXPECT_LT(fixed->memory_gb_s, 0.7 * on->memory_gb_s);
  EXPECT_LT(fixed->idle_memory_gb_s, on->idle_memory_gb_s);
  o.policy = "lazy";
  EXPECT_EQ(run_fleet_replay(o).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace fleet_replay_test
}  // namespace tessera::bench
