#include <gtest/gtest.h>

#include <fstream>

#include "tessera/bench/engine_backend.h"
#include "tessera/bench/null_backend.h"
#include "tessera/bench/report_html.h"
#include "tessera/bench/serve_printer.h"
#include "tessera/bench/serve_record.h"
#include "tessera/bench/sweep.h"
#include "tessera/bench/synthetic_prompts.h"
#include "tessera/bench/table.h"
#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::bench {
namespace serve_record_test {

ServePoint null_point(const std::string& label, double rate, const Slo& slo) {
  static NullBackend sut(NullBackendOptions{});
  static InMemoryLibrary lib = [] {
    InMemoryLibrary l;
    for (int i = 0; i < 3; ++i) l.add(QuerySample{"x y", {}, 2, 4});
    return l;
  }();
  RealSleeper sleeper;
  LoadGenerator gen(&sut, &lib, &sleeper);
  ServePoint p;
  p.label = label;
  p.settings.scenario = Scenario::kServer;
  p.settings.arrivals = {ArrivalKind::kPoisson, rate, 1.0};
  p.settings.min_queries = 20;
  p.settings.warmup_queries = 2;
  p.slo = slo;
  p.run = *gen.run(p.settings);
  p.metrics = compute_metrics(p.run, slo);
  return p;
}

TEST(ServeRecord, SummaryUsesVllmKeyNames) {
  const ServePoint p = null_point("", 2000, *parse_slo("ttft=1000"));
  const auto j = summary_json({{"commit", "abc"}}, {{"kind", "null"}}, "m", {p}, 0.99);
  for (const char* k : {"completed", "total_input_tokens", "total_output_tokens",
                        "request_throughput", "output_throughput", "total_token_throughput",
                        "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
                        "p99.9_ttft_ms", "mean_tpot_ms", "p99_tpot_ms", "mean_itl_ms",
                        "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms", "request_goodput",
                        "duration", "max_concurrency", "request_rate", "burstiness",
                        "model_id", "environment", "backend"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["completed"], 20);
  EXPECT_EQ(j["total_output_tokens"], 80);
  EXPECT_EQ(j["errors_by_kind"].size(), 0u);
  EXPECT_EQ(percentile_key(99.9), "p99.9");
  EXPECT_EQ(percentile_key(50), "p50");
  // Without an SLO vLLM has no goodput.
  const auto none = summary_json({}, {}, "m", {null_point("", 2000, Slo{})}, 0.99);
  EXPECT_TRUE(none["request_goodput"].is_null());
}

TEST(ServeRecord, SweepFindsWhereTheSloBreaks) {
  std::vector<ServeMetrics> ms(4);
  ms[0].slo_attainment = 1.0;
  ms[1].slo_attainment = 0.995;
  ms[2].slo_attainment = 0.95;
  ms[3].slo_attainment = 0.5;
  EXPECT_EQ(first_breaking_point(ms, 0.99), 2);
  EXPECT_EQ(first_breaking_point(ms, 0.4), -1);
  EXPECT_EQ(*parse_series("1,2.5,inf") , (std::vector<double>{1, 2.5, INFINITY}));
  EXPECT_FALSE(parse_series("1,,2").is_ok());
  EXPECT_FALSE(parse_series("0").is_ok());
  std::vector<ServePoint> pts = {null_point("rate=100", 100, *parse_slo("e2e=1000")),
                                 null_point("rate=200", 200, *parse_slo("e2e=1000"))};
  const auto j = summary_json({}, {}, "m", pts, 0.99);
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][1]["label"], "rate=200");
  EXPECT_TRUE(j["slo_break"]["first_failing_point"].is_null());
  EXPECT_EQ(j["slo_break"]["last_passing_point"], "rate=200");
  EXPECT_NE(format_sweep(pts, 0.99).find("SLOs hold"), std::string::npos);
}

TEST(ServeRecord, RequestsJsonlHasEveryQueryIncludingWarmup) {
  testing::TempDir dir;
  const ServePoint p = null_point("", 5000, Slo{});
  ASSERT_TRUE(write_requests_jsonl(dir.file("r.jsonl"), {p}).is_ok());
  std::ifstream in(dir.file("r.jsonl"));
  std::string line;
  int n = 0, warm = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    ++n;
    warm += j["warmup"].get<bool>();
    EXPECT_EQ(j["chunk_tokens"].size(), 4u);
    EXPECT_FALSE(j["e2el_ms"].is_null());
  }
  EXPECT_EQ(n, 22);
  EXPECT_EQ(warm, 2);
}

TEST(ServeRecord, MlperfSummaryAndTerminalTable) {
  ServePoint p = null_point("", 5000, *parse_slo("ttft=10000,tpot=10000"));
  const std::string s = format_mlperf_summary(p, "null");
  EXPECT_NE(s.find("MLPerf Results Summary"), std::string::npos);
  EXPECT_NE(s.find("Result is : VALID"), std::string::npos);
  EXPECT_NE(s.find("99.90 percentile latency (ns)"), std::string::npos);
  EXPECT_NE(s.find("ttft_latency (ns): 10000000000"), std::string::npos);
  p.settings.min_duration_s = 1e6;  // not met
  EXPECT_NE(format_mlperf_summary(p, "null").find("Min duration satisfied : NO"),
            std::string::npos);
  const std::string t = format_summary(p, "null");
  EXPECT_NE(t.find("| TTFT "), std::string::npos);
  EXPECT_NE(t.find("20 completed, 0 failed"), std::string::npos);
  Table tb({"a", "bb"});
  tb.add_row({"x", "1"});
  EXPECT_EQ(tb.to_string(), "| a   |  bb |\n|-----|----:|\n| x   |   1 |\n");
  Progress pr;
  pr.planned = 10;
  pr.completed = 4;
  pr.errors = 1;
  pr.in_flight = 2;
  pr.elapsed_s = 2;
  pr.output_tokens = 100;
  EXPECT_EQ(format_progress(pr), "4/10 done (1 errors), 2 in flight, 2.0 s, 50 tok/s");
}

TEST(ServeRecord, ReportHtmlEmbedsDataAndSaysWhenChartsAreMissing) {
  const ServePoint p = null_point("", 5000, Slo{});
  const auto summary = summary_json({}, {{"kind", "null"}}, "m", {p}, 0.99);
  const std::string h = render_report_html(summary, {p}, "");
  EXPECT_NE(h.find("id=\"chart-data\""), std::string::npos);
  EXPECT_NE(h.find("Chart.js was not inlined"), std::string::npos);
  EXPECT_EQ(h.find("<script src="), std::string::npos);  // self-contained: nothing fetched
  const std::string with = render_report_html(summary, {p}, "var Chart = 1; // </script>");
  EXPECT_NE(with.find("var Chart = 1; // <\\/script>"), std::string::npos);
  const auto data = report_chart_data({p});
  EXPECT_EQ(data["points"][0]["cdf"]["ttft"].back()["y"], 1.0);
}

TEST(EngineBackend, CountsTokensExactlyThroughTheHarness) {
  testing::TempDir dir;
  model::SynthOptions so;
  so.shape = *model::find_synth_shape("tiny");
  so.dtype = kernels::DType::kQ8_0;
  ASSERT_TRUE(model::write_synthetic_model(so, dir.file("tiny.gguf")).is_ok());
  auto m = model::load_model(dir.file("tiny.gguf"));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  std::shared_ptr<model::Model> model(std::move(m).value());
  std::shared_ptr<const model::Tokenizer> tok(
      std::move(model::make_tokenizer(model->file().metadata)).value());
  engine::EngineOptions eo;
  eo.n_threads = 1;
  eo.ctx_size = 128;
  eo.max_running = 4;
  auto e = engine::Engine::create(model, tok, eo);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  (*e)->start();
  EngineBackend sut(e->get(), EngineBackendOptions{}, {});
  PromptSynthesizer synth(tok.get());
  SyntheticOptions o;
  o.input_len = *parse_length_spec("uniform:4:12");
  o.output_len = *parse_length_spec("uniform:1:6");
  o.n_prompts = 6;
  InMemoryLibrary lib = make_synthetic_library(o, synth);
  lib.add(QuerySample{"some text to tokenize", {}, 5, 3});  // tokenized in prepare()
  RealSleeper sleeper;
  LoadGenerator gen(&sut, &lib, &sleeper);
  TestSettings s;
  s.scenario = Scenario::kConcurrency;
  s.concurrency = 3;
  s.min_queries = 14;
  const RunResult run = *gen.run(s);
  int64_t want_out = 0, want_in = 0;
  for (const QueryRecord& r : run.records) {
    EXPECT_TRUE(r.ok) << (r.error ? r.error->message : "");
    const QuerySample& q = lib.sample(r.sample_index);
    EXPECT_EQ(r.output_tokens, q.max_output_tokens);  // ignore_eos: exact lengths
    EXPECT_EQ(static_cast<int>(r.chunk_ns.size()), q.max_output_tokens);
    if (!q.tokens.empty()) {
      EXPECT_EQ(r.input_tokens, static_cast<int>(q.tokens.size()));
    }
    want_out += q.max_output_tokens;
    want_in += r.input_tokens;
  }
  const ServeMetrics mt = compute_metrics(run, Slo{});
  EXPECT_EQ(mt.total_output_tokens, want_out);
  EXPECT_TRUE(mt.output_tokens_exact);
  EXPECT_LE(mt.peak_in_flight, 3);
  (*e)->stop();
}

}  // namespace serve_record_test
}  // namespace tessera::bench
