// The benchmarks' setup as library functions: `bench serve`'s points (one scenario or a sweep)
// and targets, `bench fleet`'s arrival schedule, `bench train`'s text summary, and the training
// records `tessera train --json` prints.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "tessera/bench/fleet_bench.h"
#include "tessera/bench/serve_bench.h"
#include "tessera/bench/serve_target.h"
#include "tessera/bench/train_bench.h"
#include "tessera/bench/train_record.h"
#include "test_util.h"

namespace tessera::bench {
namespace bench_setup_test {

TEST(ServeBenchPlan, OneServerPoint) {
  ServeBenchOptions o;
  o.request_rate = "4";
  o.concurrency = "8";
  o.num_prompts = 50;
  o.burstiness = 0.5;
  auto plan = plan_serve_benchmark(o);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  ASSERT_EQ(plan->points.size(), 1u);
  const auto& [label, s] = plan->points[0];
  EXPECT_EQ(label, "");
  EXPECT_EQ(s.scenario, Scenario::kServer);
  EXPECT_EQ(s.arrivals.rate, 4.0);
  EXPECT_EQ(s.arrivals.kind, ArrivalKind::kGamma);  // burstiness != 1 with poisson
  EXPECT_EQ(s.concurrency, 8);
  EXPECT_EQ(s.min_queries, 50);
}

TEST(ServeBenchPlan, InfiniteRateByDefault) {
  auto plan = plan_serve_benchmark(ServeBenchOptions{});
  ASSERT_TRUE(plan.is_ok());
  EXPECT_TRUE(std::isinf(plan->points[0].second.arrivals.rate));
}

TEST(ServeBenchPlan, SweepsRatesOrConcurrencies) {
  ServeBenchOptions o;
  o.scenario = "sweep";
  o.request_rate = "1,2,4";
  auto by_rate = plan_serve_benchmark(o);
  ASSERT_TRUE(by_rate.is_ok()) << by_rate.status().to_string();
  ASSERT_EQ(by_rate->points.size(), 3u);
  EXPECT_EQ(by_rate->points[2].first, "rate=4");
  EXPECT_EQ(by_rate->points[2].second.scenario, Scenario::kServer);
  o.request_rate = "inf";
  o.concurrency = "1,8";
  auto by_concurrency = plan_serve_benchmark(o);
  ASSERT_TRUE(by_concurrency.is_ok());
  ASSERT_EQ(by_concurrency->points.size(), 2u);
  EXPECT_EQ(by_concurrency->points[1].first, "concurrency=8");
  EXPECT_EQ(by_concurrency->points[1].second.scenario, Scenario::kConcurrency);
  EXPECT_EQ(by_concurrency->points[1].second.concurrency, 8);
}

TEST(ServeBenchPlan, RefusesBadValues) {
  ServeBenchOptions o;
  o.concurrency = "0";
  EXPECT_EQ(plan_serve_benchmark(o).status().message(), "--concurrency: expected an integer >= 1");
  o = ServeBenchOptions{};
  o.request_rate = "1,2";
  EXPECT_EQ(plan_serve_benchmark(o).status().message(),
            "--request-rate: one value unless --scenario sweep");
  o = ServeBenchOptions{};
  o.scenario = "marathon";
  EXPECT_FALSE(plan_serve_benchmark(o).is_ok());
}

TEST(ServeTarget, NullTargetAndUnknownForms) {
  ServeBenchOptions o;
  o.target = "null";
  auto t = make_serve_target(o);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->name, "null");
  EXPECT_FALSE(t->spec_counters().has_value());
  o.target = "ftp://host";
  EXPECT_NE(make_serve_target(o).status().message().find("expected an http:// URL"), std::string::npos);
  o.target = "inproc:model.gguf";  // no loader given
  EXPECT_FALSE(make_serve_target(o).is_ok());
}

TEST(ServeBench, RunsTheNullBackendThroughTheHooks) {
  ServeBenchOptions o;
  o.target = "null";
  o.num_prompts = 5;
  o.warmup = 0;
  o.input_len = "8";
  o.output_len = "4";
  int points = 0, runs = 0;
  ServeBenchHooks hooks;
  hooks.after_run = [&] { ++runs; };
  hooks.on_point = [&](const ServePoint& p, const std::string& name) {
    ++points;
    EXPECT_EQ(name, "null");
    EXPECT_EQ(p.metrics.completed, 5);
  };
  auto r = run_serve_benchmark(o, hooks);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(points, 1);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(r->backend["workload"]["source"], "synthetic");
  EXPECT_FALSE(r->spec_delta.has_value());
}

TEST(ServeTarget, BodyVariantsAreJsonObjectsPerLine) {
  testing::TempDir dir;
  std::ofstream(dir.file("v.jsonl")) << "{\"model\": \"a\"}\n\n{\"model\": \"b\"}\n";
  auto v = read_body_variants(dir.file("v.jsonl"));
  ASSERT_TRUE(v.is_ok());
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[1]["model"], "b");
  std::ofstream(dir.file("bad.jsonl")) << "{\"model\": \"a\"}\n[1]\n";
  EXPECT_NE(read_body_variants(dir.file("bad.jsonl")).status().message().find("line 2"),
            std::string::npos);
}

TEST(FleetBench, ArrivalsAreWrittenInTimeOrder) {
  testing::TempDir dir;
  FleetReplayOptions run;
  run.prompt_tokens = 16;
  run.max_tokens = 4;
  run.models.resize(2);
  run.models[0].spec.name = "a";
  run.models[0].arrivals_s = {0.5, 2.0};
  run.models[1].spec.name = "b";
  run.models[1].arrivals_s = {1.0};
  ASSERT_TRUE(write_fleet_arrivals(dir.file("arrivals.csv"), run).is_ok());
  std::ifstream in(dir.file("arrivals.csv"));
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(),
            "model,t_s,input_tokens,output_tokens\n"
            "a,0.500000,16,4\n"
            "b,1.000000,16,4\n"
            "a,2.000000,16,4\n");
}

TEST(FleetBench, NamedClientsMustMatchTheModels) {
  FleetBenchOptions o;
  o.servegen_dir = "/nonexistent";
  o.clients = "x";
  EXPECT_FALSE(pick_servegen_clients(o, 1).is_ok());  // the client file does not load
}

TEST(TrainBench, SummaryText) {
  const nlohmann::json s = {{"status", "success"}, {"model", "llama dim 8"}, {"corpus", "c"},
                            {"tokens_per_step", 1024}, {"steps_done", 25},
                            {"train_seconds", 10.0}, {"eval_seconds", 1.0},
                            {"final_val_loss", 2.5}, {"target_loss", 2.8}, {"target_step", 25},
                            {"target_seconds", 9.5}, {"tokens_per_second", 2560.0},
                            {"achieved_gflops", 1.5}, {"flops_per_token", 600000.0},
                            {"compute", "f32"}, {"mfu_ceiling_gflops", 100.0},
                            {"mfu_ceiling", "f32 FMA (avx2)"}, {"mfu", 0.015}};
  EXPECT_EQ(format_train_bench_summary(s),
            "bench train: llama dim 8 on c; 1024 tokens per step\n"
            "  reached the target after 25 steps (10.0 s training, 1.0 s evaluating): validation "
            "loss 2.5000, target 2.800 at step 25 (9.5 s of training)\n"
            "  2560.0 tokens/s, 1.50 GFLOP/s achieved (600000 FLOP per token, f32 compute), "
            "ceiling 100.0 GFLOP/s (f32 FMA (avx2)): MFU 1.50%\n");
}

TEST(TrainRecord, TotalsAndSteps) {
  train::PretrainReport r;
  r.tokens = 1000;
  r.seconds = 2.0;
  r.flops_per_token = 1e6;
  r.final_val_loss = 3.0;
  r.steps.push_back({1, 4.0, 1e-3, 0.5, 1.0, -1});
  r.steps.push_back({2, 3.5, 1e-3, 0.4, 2.0, 3.0});
  const nlohmann::json j = train_totals_json(r);
  EXPECT_EQ(j["tokens_per_second"], 500.0);
  EXPECT_EQ(j["achieved_gflops"], 0.5);
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_FALSE(j["steps"][0].contains("val_loss"));
  EXPECT_EQ(j["steps"][1]["val_loss"], 3.0);
}

}  // namespace bench_setup_test
}  // namespace tessera::bench
