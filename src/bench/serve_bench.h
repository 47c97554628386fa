// `bench serve`, the serving benchmark: plans the points (one scenario, or a sweep over request
// rates or concurrencies), builds the target (serve_target.h) and the prompts
// (serve_workload.h), runs every point through the LoadGenerator, measures the speculation and
// structured-output constraint counters around the run (warm-up queries included), and writes the records (summary.json, requests.jsonl, the MLPerf
// summary, report.html). The caller owns flags and printing, through hooks.
// Thread-safety: call from one thread; the hooks are called on it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/bench/load_generator.h"
#include "tessera/bench/metrics.h"
#include "tessera/bench/serve_bench_options.h"
#include "tessera/bench/constraint_counters.h"
#include "tessera/bench/serve_record.h"
#include "tessera/bench/spec_counters.h"

namespace tessera::bench {

// The points to run, each with its label ("" for a single run; "rate=4", "concurrency=8" in a
// sweep), and the SLO goodput is measured against.
struct ServeBenchPlan {
  std::vector<std::pair<std::string, TestSettings>> points;
  Slo slo;
};

// Errors: kInvalidArgument (an unknown scenario or arrival, a bad SLO, series, rate or
// concurrency).
Result<ServeBenchPlan> plan_serve_benchmark(const ServeBenchOptions& options);

struct ServeBenchHooks {
  // Progress of the running point, about every progress_interval_s (none when empty).
  std::function<void(const std::string& label, const Progress& p)> on_progress;
  double progress_interval_s = 0.25;
  std::function<void()> after_run;  // after each point's run, whatever its outcome
  // Each point measured, in order, with the target's name.
  std::function<void(const ServePoint& point, const std::string& target_name)> on_point;
};

struct ServeBenchResult {
  std::vector<ServePoint> points;
  std::string target_name;
  // The target's description, its workload, --response-format, and the speculation and
  // constraint counters (constraint_us_per_token etc., present when any token was constrained).
  nlohmann::json backend;
  std::optional<SpecCounters> spec_delta;  // draft/accepted tokens during the run, where counted
  // Structured output: constraint time and constrained tokens during the run, where counted.
  std::optional<ConstraintCounters> constraint_delta;
};

// Errors: the plan's, the target's, the workload's, "--scenario trace needs --trace FILE", a
// run's.
Result<ServeBenchResult> run_serve_benchmark(const ServeBenchOptions& options,
                                             const ServeBenchHooks& hooks);

// Creates `dir` for the records. Errors: kIoError ("cannot create --out directory ...").
Status make_out_dir(const std::string& dir);

// Writes summary.json, requests.jsonl, mlperf_log_summary.txt and report.html into `dir` (made by
// make_out_dir); `chart_js` may be empty (tables only). Errors: kIoError.
Status write_serve_bench_records(const std::string& dir, const ServeBenchOptions& options,
                                 const ServeBenchResult& result, const std::string& chart_js);

}  // namespace tessera::bench
