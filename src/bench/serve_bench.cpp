#include "tessera/bench/serve_bench.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <limits>

#include "tessera/base/thread_pool.h"
#include "tessera/bench/arrival.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/report_html.h"
#include "tessera/bench/serve_printer.h"
#include "tessera/bench/serve_target.h"
#include "tessera/bench/serve_workload.h"
#include "tessera/bench/sleeper.h"
#include "tessera/bench/sweep.h"

namespace tessera::bench {
namespace serve_bench {

Result<double> parse_rate(const std::string& s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  TS_ASSIGN_OR_RETURN(auto v, parse_series(s));
  if (v.size() != 1) return invalid_argument("--request-rate: one value unless --scenario sweep");
  return v[0];
}

// A sweep: one point per request rate (server scenario), or per concurrency when only those
// are given.
Status plan_sweep(const ServeBenchOptions& a, const TestSettings& base, ServeBenchPlan& plan) {
  const bool by_rate = a.concurrency.empty() || a.request_rate != "inf";
  auto series = parse_series(by_rate ? a.request_rate : a.concurrency);
  if (!series.is_ok()) return series.status().with_context("--scenario sweep");
  for (double v : *series) {
    TestSettings s = base;
    if (by_rate) {
      s.scenario = Scenario::kServer;
      s.arrivals.rate = v;
      if (!a.concurrency.empty()) s.concurrency = std::stoi(a.concurrency);
      plan.points.emplace_back(fmt::format("rate={:g}", v), s);
    } else {
      s.scenario = Scenario::kConcurrency;
      s.concurrency = static_cast<int32_t>(v);
      plan.points.emplace_back(fmt::format("concurrency={:g}", v), s);
    }
  }
  return Status::ok();
}

Status plan_single(const ServeBenchOptions& a, const TestSettings& base, ServeBenchPlan& plan) {
  TestSettings s = base;
  if (s.scenario == Scenario::kServer) {
    TS_ASSIGN_OR_RETURN(s.arrivals.rate, parse_rate(a.request_rate));
  }
  if (!a.concurrency.empty()) {
    char* end = nullptr;
    const long c = std::strtol(a.concurrency.c_str(), &end, 10);
    if (*end != '\0' || c < 1) return invalid_argument("--concurrency: expected an integer >= 1");
    s.concurrency = static_cast<int32_t>(c);
  }
  plan.points.emplace_back("", s);
  return Status::ok();
}

// Runs every point, in order; hooks.on_point sees each.
Result<std::vector<ServePoint>> run_points(ServeBenchPlan& plan, ServeTarget& target,
                                           ServeWorkload& work, const ServeBenchHooks& hooks) {
  RealSleeper sleeper;
  LoadGenerator gen(target.sut.get(), &work.library, &sleeper);
  std::vector<ServePoint> results;
  for (auto& [label, s] : plan.points) {
    if (hooks.on_progress) {
      s.progress_interval_s = hooks.progress_interval_s;
      s.on_progress = [&hooks, label = label](const Progress& p) { hooks.on_progress(label, p); };
    }
    auto run = gen.run(s);
    if (hooks.after_run) hooks.after_run();
    if (!run.is_ok()) return run.status();
    ServePoint p;
    p.label = label;
    p.settings = s;
    p.settings.on_progress = nullptr;
    p.slo = plan.slo;
    p.metrics = compute_metrics(*run, plan.slo);
    p.run = std::move(run).value();
    if (hooks.on_point) hooks.on_point(p, target.name);
    results.push_back(std::move(p));
  }
  return results;
}

}  // namespace serve_bench

Result<ServeBenchPlan> plan_serve_benchmark(const ServeBenchOptions& a) {
  const bool sweep = a.scenario == "sweep";
  TestSettings base;
  if (!sweep) {
    TS_ASSIGN_OR_RETURN(base.scenario, parse_scenario(a.scenario));
  }
  ServeBenchPlan plan;
  TS_ASSIGN_OR_RETURN(plan.slo, parse_slo(a.slo));
  TS_ASSIGN_OR_RETURN(const ArrivalKind kind, parse_arrival_kind(a.arrival));
  // As in vLLM: a burstiness other than 1 means gamma arrivals.
  base.arrivals.kind =
      (a.burstiness != 1.0 && kind == ArrivalKind::kPoisson) ? ArrivalKind::kGamma : kind;
  base.arrivals.burstiness = a.burstiness;
  base.min_queries = a.num_prompts;
  base.min_duration_s = a.min_duration;
  base.warmup_queries = a.warmup;
  base.seed = a.seed;
  base.shuffle_samples = a.shuffle;
  TS_RETURN_IF_ERROR(sweep ? serve_bench::plan_sweep(a, base, plan)
                           : serve_bench::plan_single(a, base, plan));
  return plan;
}

Result<ServeBenchResult> run_serve_benchmark(const ServeBenchOptions& a, const ServeBenchHooks& hooks) {
  TS_ASSIGN_OR_RETURN(ServeBenchPlan plan, plan_serve_benchmark(a));
  TS_ASSIGN_OR_RETURN(ServeTarget target, make_serve_target(a));
  TS_ASSIGN_OR_RETURN(ServeWorkload work, make_serve_workload(a, target.tokenizer.get()));
  for (auto& [label, s] : plan.points) {
    if (s.scenario != Scenario::kTrace) continue;
    if (work.trace_times_s.empty()) return invalid_argument("--scenario trace needs --trace FILE");
    s.trace_times_s = work.trace_times_s;
  }
  // Speculation and constraint counters before and after (in-process engine, or a Tessera
  // server's /metrics).
  const std::optional<SpecCounters> spec_before = target.spec_counters();
  const std::optional<ConstraintCounters> constraint_before = target.constraint_counters();
  ServeBenchResult result;
  TS_ASSIGN_OR_RETURN(result.points, serve_bench::run_points(plan, target, work, hooks));
  result.target_name = target.name;
  if (const std::optional<SpecCounters> after = target.spec_counters(); after && spec_before) {
    result.spec_delta = SpecCounters{after->draft_tokens - spec_before->draft_tokens,
                                     after->accepted_tokens - spec_before->accepted_tokens};
  }
  if (const std::optional<ConstraintCounters> after = target.constraint_counters();
      after && constraint_before) {
    result.constraint_delta = *after - *constraint_before;
  }
  result.backend = target.sut->describe();
  result.backend["workload"] = work.description;
  if (!target.response_format.is_null()) result.backend["response_format"] = target.response_format;
  if (const auto& c = result.constraint_delta; c && c->tokens > 0) {
    result.backend["constrained_tokens"] = c->tokens;
    result.backend["constraint_seconds"] = c->seconds;
    result.backend["constraint_us_per_token"] = c->us_per_token();
  }
  if (result.spec_delta) {
    result.backend["spec_draft_tokens"] = result.spec_delta->draft_tokens;
    result.backend["spec_accepted_tokens"] = result.spec_delta->accepted_tokens;
    result.backend["spec_acceptance_rate"] = result.spec_delta->acceptance();
  }
  return result;
}

Status make_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("cannot create --out directory " + dir + ": " + ec.message());
  return Status::ok();
}

Status write_serve_bench_records(const std::string& dir, const ServeBenchOptions& a,
                                 const ServeBenchResult& r, const std::string& chart_js) {
  const int threads = a.threads > 0 ? a.threads : hardware_threads();
  const nlohmann::json summary = summary_json(describe_environment(threads), r.backend, a.model,
                                              r.points, a.slo_attainment);
  const std::string d = dir + "/";
  TS_RETURN_IF_ERROR(write_text_file(d + "summary.json", summary.dump(2) + "\n"));
  TS_RETURN_IF_ERROR(write_requests_jsonl(d + "requests.jsonl", r.points));
  std::string mlperf;
  for (const auto& p : r.points) {
    if (!p.label.empty()) mlperf += "# " + p.label + "\n";
    mlperf += format_mlperf_summary(p, r.target_name) + "\n";
  }
  TS_RETURN_IF_ERROR(write_text_file(d + "mlperf_log_summary.txt", mlperf));
  return write_text_file(d + "report.html", render_report_html(summary, r.points, chart_js));
}

}  // namespace tessera::bench
