// `tessera sim`: the fleet simulator. Builds a workload (ServeGen clients scaled to many models,
// or one recorded trace), sizes each model's deployment (deployment search on the accelerator's
// roofline costs, or this CPU's measured costs), runs each policy through the same
// FleetController the live server uses, and prints the headline table; --json, --html and
// --chrome-trace write the report.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "tessera/sim/accelerator.h"
#include "tessera/sim/cost_model.h"
#include "tessera/sim/deployment_search.h"
#include "tessera/sim/sim_report.h"
#include "tessera/sim/simulator.h"
#include "tessera/sim/workload_schedule.h"
#include "tessera/sim/workload_servegen.h"
#include "tessera/sim/workload_trace.h"

namespace tessera::cli {

namespace {

struct SimArgs {
  std::string servegen = "../shared/traces/servegen";
  std::string trace;  // a recorded trace instead of ServeGen
  std::string schedule;  // an exact schedule (`bench fleet --arrivals-out`) instead
  int64_t models = 1000;
  double hours = 6.0;
  double rate_scale = 0.01;
  double max_peak_rps = 0.0;
  double time_scale = 1.0;
  std::string lengths = "../shared/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv";
  int32_t max_input = 8192;
  int32_t max_output = 2048;
  int32_t fixed_input = 0;   // > 0: fixed lengths instead of a trace
  int32_t fixed_output = 0;
  std::string accelerator = "h100";
  std::string accelerator_json;
  std::string shape;  // one shape for every model (else by ServeGen category)
  std::string dtype = "bf16";
  std::string bench_record;   // measured costs: `bench model --json`
  std::string resume_record;  // and `bench resume --json`
  double decode_step_s = 0.0;  // measured costs: given instead of the record's (0: the record's)
  double row_s = 0.0;
  double resume_s = -1.0;      // and instead of the resume record's (-1: the record's)
  double suspend_s = -1.0;
  int32_t max_running = 0;    // measured costs: the engine's batch limit
  bool shared_device = false;
  bool device_arbitration = false;
  int32_t max_batch_tokens = 0;  // measured costs: the engine's rows per step (0: 2048)
  int64_t active_bytes = 0;   // measured costs: weights + KV pool of one replica (the KV from it)
  double schedule_s = 0.0;  // --schedule: the span (0: to the last arrival)
  std::string policies = "all";
  double keep_alive_s = 300.0;
  double histogram_bin_s = 60.0;
  double headroom = 1.0;
  double ttft_slo_s = 2.0;
  double tpot_slo_s = 0.1;
  int32_t pool_accelerators = 8;
  int32_t pool_max_models = 32;
  double pool_overcommit = 4.0;
  double pool_fill = 0.8;
  double deadline_s = 60.0;
  uint64_t seed = 1;
  std::string json_out, html_out, trace_out, chartjs;
  std::string requests_out;  // every request's outcome (CSV)
  std::string iterations_out;  // every arbitrated iteration (CSV)
  int32_t step_block = 0;  // SimOptions::step_block
  std::string step_multipliers;  // CSV: multiplier,switch,prompt (SimOptions::step_multipliers)
  double switch_s = 0.0;         // SimOptions::device_switch_ns
  std::string device_speed;      // CSV: t_s,factor (SimOptions::device_speed)
  int64_t trace_events = 20000;
};

// The model shape a ServeGen client category stands for (its published model sizes).
std::string shape_for_source(const std::string& source) {
  if (source.find("m-large") != std::string::npos) return "llama-3-70b";
  if (source.find("m-mid") != std::string::npos) return "qwen2.5-32b";
  if (source.find("reason") != std::string::npos) return "llama-3-70b";
  return "llama-3-8b";
}

// The request lengths the flags ask for: a length trace, or fixed lengths; clipped.
sim::LengthSource length_source(const SimArgs& a) {
  sim::LengthSource ls;
  if (a.fixed_input > 0) {
    ls.fixed_input_tokens = a.fixed_input;
    ls.fixed_output_tokens = a.fixed_output > 0 ? a.fixed_output : 128;
  } else {
    ls.trace_path = a.lengths;
  }
  ls.max_input_tokens = a.max_input;
  ls.max_output_tokens = a.max_output;
  return ls;
}

Result<std::unique_ptr<sim::Workload>> make_workload(const SimArgs& a) {
  if (!a.schedule.empty()) return sim::make_schedule_workload(a.schedule, a.schedule_s);
  if (!a.trace.empty()) {
    sim::TraceWorkloadOptions t;
    t.path = a.trace;
    t.n_models = a.models;
    t.time_scale = a.time_scale;
    t.duration_s = a.hours * 3600.0;
    t.max_input_tokens = a.max_input;
    t.max_output_tokens = a.max_output;
    t.seed = a.seed;
    return sim::make_trace_workload(t);
  }
  sim::ServeGenWorkloadOptions o;
  o.dir = a.servegen;
  o.n_models = a.models;
  o.duration_s = a.hours * 3600.0;
  o.rate_scale = a.rate_scale;
  o.max_peak_rps = a.max_peak_rps;
  o.seed = a.seed;
  o.lengths = length_source(a);
  return sim::make_servegen_workload(o);
}

// The rows of a small CSV file after its header line: `row(text, line number)` for each non-empty
// one, stopping at the first error it returns.
Status for_each_csv_row(const std::string& path,
                        const std::function<Status(const std::string&, int64_t)>& row) {
  std::ifstream in(path);
  if (!in) return io_error("cannot read " + path);
  std::string line;
  std::getline(in, line);  // the header
  for (int64_t n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    if (Status st = row(line, n); !st.is_ok()) return st;
  }
  return Status();
}

// `--step-multipliers FILE`: a header line, then `multiplier,switch,prompt` rows (the last
// two 0 or 1), into pools[prompt][switch].
Status read_step_multipliers(const std::string& path, std::vector<double> (&pools)[2][2],
                             std::vector<std::pair<double, bool>>& series) {
  return for_each_csv_row(path, [&](const std::string& line, int64_t n) {
    double m = 0.0;
    int c = -1, p = -1;
    char comma1 = 0, comma2 = 0;
    std::istringstream row(line);
    if (!(row >> m >> comma1 >> c >> comma2 >> p) || comma1 != ',' || comma2 != ',' ||
        !(m > 0.0) || !std::isfinite(m) || (c != 0 && c != 1) || (p != 0 && p != 1)) {
      return invalid_argument(fmt::format("{}:{}: expected 'multiplier,switch,prompt' with a "
                                          "multiplier > 0 and the others 0 or 1, got '{}'",
                                          path, n, line));
    }
    pools[p][c].push_back(m);
    series.emplace_back(m, p == 1);
    return Status();
  });
}

// `--device-speed FILE`: a header line, then `t_s,factor` rows, times increasing, factors > 0.
Status read_device_speed(const std::string& path, std::vector<std::pair<int64_t, double>>& out) {
  return for_each_csv_row(path, [&](const std::string& line, int64_t n) {
    double t = 0.0, f = 0.0;
    char comma = 0;
    std::istringstream row(line);
    if (!(row >> t >> comma >> f) || comma != ',' || !std::isfinite(t) || t < 0.0 || t > 1e9 ||
        !std::isfinite(f) || !(f > 0.0) ||
        (!out.empty() && static_cast<int64_t>(t * 1e9) <= out.back().first)) {
      return invalid_argument(fmt::format("{}:{}: expected 't_s,factor' with times increasing "
                                          "and a factor > 0, got '{}'", path, n, line));
    }
    out.emplace_back(static_cast<int64_t>(t * 1e9), f);
    return Status();
  });
}

Result<nlohmann::json> read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read " + path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return Status(ErrorCode::kCorruptData, path + " is not JSON");
  return j;
}

int run_sim(const SimArgs& a) {
  // The accelerator.
  sim::AcceleratorSpec acc;
  if (!a.accelerator_json.empty()) {
    auto j = read_json(a.accelerator_json);
    if (!j.is_ok()) return fail(j.status());
    auto spec = sim::accelerator_from_json(*j);
    if (!spec.is_ok()) return fail(spec.status().with_context(a.accelerator_json));
    acc = *spec;
  } else {
    auto spec = sim::find_accelerator(a.accelerator);
    if (!spec.is_ok()) return fail(spec.status());
    acc = *spec;
  }
  sim::SloTargets slo;
  slo.ttft_ns = static_cast<int64_t>(a.ttft_slo_s * 1e9);
  slo.tpot_ns = static_cast<int64_t>(a.tpot_slo_s * 1e9);

  auto probe_workload = make_workload(a);
  if (!probe_workload.is_ok()) return fail(probe_workload.status());
  const std::vector<sim::WorkloadModel> wmodels = (*probe_workload)->models();
  const std::string workload_description = (*probe_workload)->describe();
  probe_workload->reset();

  auto lengths = sim::LengthSampler::make(length_source(a));
  if (!lengths.is_ok()) return fail(lengths.status());

  // Serving configurations: per shape, the naive one and the searched ones (roofline), or the
  // one measured on this machine.
  std::map<std::string, sim::ServingConfig> naive;
  std::map<std::string, std::vector<sim::ServingConfig>> searched;
  const bool measured = !a.bench_record.empty();
  if (measured) {
    auto rec = read_json(a.bench_record);
    if (!rec.is_ok()) return fail(rec.status());
    sim::MeasuredCostOptions mo;
    mo.tg_step_s = a.decode_step_s;
    mo.per_row_s = a.row_s;
    if (!a.resume_record.empty()) {
      auto rr = read_json(a.resume_record);
      if (!rr.is_ok()) return fail(rr.status());
      if (Status s = sim::apply_resume_record(*rr, mo); !s.is_ok()) return fail(s);
    }
    if (a.resume_s >= 0) mo.resume_s = a.resume_s;
    if (a.suspend_s >= 0) mo.suspend_s = a.suspend_s;
    // The KV pool: the tokens that make up --active-bytes past the weights, else 64k.
    mo.kv_capacity_tokens = 65536;
    auto cost = sim::measured_cost_from_json(*rec, mo);
    if (!cost.is_ok()) return fail(cost.status().with_context(a.bench_record));
    if (a.active_bytes > 0) {
      const int64_t kv = a.active_bytes - (*cost)->weight_bytes();
      if (kv <= 0 || (*cost)->kv_bytes_per_token() <= 0) {
        return fail(fmt::format("--active-bytes {} is not above the weights ({} bytes)",
                                a.active_bytes, (*cost)->weight_bytes()));
      }
      mo.kv_capacity_tokens = std::max<int64_t>(1, kv / (*cost)->kv_bytes_per_token());
      cost = sim::measured_cost_from_json(*rec, mo);
      if (!cost.is_ok()) return fail(cost.status().with_context(a.bench_record));
    }
    sim::ServingConfig c;
    c.tp = 1;
    c.max_running = a.max_running > 0 ? a.max_running : 256;
    if (a.max_batch_tokens > 0) c.max_batch_tokens = a.max_batch_tokens;
    c.cost = std::shared_ptr<const sim::CostModel>(std::move(cost).value());
    c.capacity_rps =
        sim::replica_capacity_rps(*c.cost, c.limits(), *lengths, slo, {}, &c.target_in_flight);
    naive["measured"] = c;
    searched["measured"] = {c};
  }
  std::vector<sim::SimModel> naive_models, searched_models;
  for (const sim::WorkloadModel& w : wmodels) {
    const std::string shape_name = measured ? "measured" : (!a.shape.empty() ? a.shape : shape_for_source(w.source));
    if (!naive.count(shape_name)) {
      auto shape = sim::find_model_shape(shape_name, a.dtype);
      if (!shape.is_ok()) return fail(shape.status());
      auto nc = sim::naive_config(*shape, acc, *lengths, slo);
      if (!nc.is_ok()) return fail(nc.status());
      auto sc = sim::search_configs(*shape, acc, *lengths, slo);
      if (!sc.is_ok()) return fail(sc.status());
      std::printf("tessera sim: %s on %s: naive tp %d x batch %d serves %.2f req/s per replica; "
                  "searched best tp %d x batch %d serves %.2f req/s\n",
                  shape_name.c_str(), acc.name.c_str(), nc->tp, nc->max_running, nc->capacity_rps,
                  sc->front().tp, sc->front().max_running, sc->front().capacity_rps);
      naive[shape_name] = *nc;
      searched[shape_name] = std::move(sc).value();
    }
    sim::SimModel nm;
    nm.name = w.name;
    nm.shape = shape_name;
    nm.mean_rps = w.mean_rps;
    nm.deployment = measured ? sim::Deployment{naive[shape_name], 1}
                             : sim::Deployment{naive[shape_name],
                                               sim::replicas_for(naive[shape_name], w.peak_rps * a.headroom)};
    naive_models.push_back(nm);
    sim::SimModel sm = nm;
    sm.deployment = measured ? nm.deployment
                             : sim::cheapest_deployment(searched[shape_name], w.peak_rps * a.headroom);
    searched_models.push_back(std::move(sm));
  }

  std::vector<std::string> policies;
  if (a.policies == "all") {
    policies = {"dedicated", "search", "keep-alive", "adaptive", "scaling", "pooled"};
  } else {
    std::stringstream ss(a.policies);
    for (std::string p; std::getline(ss, p, ',');) policies.push_back(p);
  }
  if (a.device_arbitration && !a.shared_device) return fail(std::string("--device-arbitration needs --shared-device"));
  if (a.switch_s > 0.0 && !a.device_arbitration) return fail(std::string("--switch-s needs --device-arbitration"));
  std::vector<double> multipliers[2][2];
  std::vector<std::pair<double, bool>> series;
  std::vector<std::pair<int64_t, double>> speed;
  if (!a.device_speed.empty()) {
    if (!a.device_arbitration) return fail(std::string("--device-speed needs --device-arbitration"));
    if (Status st = read_device_speed(a.device_speed, speed); !st.is_ok()) return fail(st);
  }
  if (!a.step_multipliers.empty()) {
    if (!a.device_arbitration) return fail(std::string("--step-multipliers needs --device-arbitration"));
    if (Status st = read_step_multipliers(a.step_multipliers, multipliers, series);
        !st.is_ok()) {
      return fail(st);
    }
  }
  std::vector<sim::SimResult> results;
  for (const std::string& p : policies) {
    auto w = make_workload(a);
    if (!w.is_ok()) return fail(w.status());
    sim::SimOptions so;
    so.policy = p == "search" ? "dedicated" : p;
    so.keep_alive_s = a.keep_alive_s;
    so.shared_device = a.shared_device;
    so.device_arbitration = a.device_arbitration;
    so.histogram.bin_width_ns = std::max<int64_t>(1'000'000, static_cast<int64_t>(a.histogram_bin_s * 1e9));
    so.slo = slo;
    so.pool_accelerators = a.pool_accelerators;
    so.pool_max_models = a.pool_max_models;
    so.pool_overcommit = a.pool_overcommit;
    so.pool_fill = a.pool_fill;
    so.request_deadline_ns = static_cast<int64_t>(a.deadline_s * 1e9);
    so.max_trace_events = a.trace_out.empty() ? 0 : a.trace_events;
    so.record_requests = !a.requests_out.empty();
    so.record_iterations = !a.iterations_out.empty();
    for (int k = 0; k < 2; ++k) {
      for (int c = 0; c < 2; ++c) so.step_multipliers[k][c] = multipliers[k][c];
    }
    so.step_seed = a.seed + 1;
    so.step_series = series;
    so.step_block = a.step_block;
    so.device_switch_ns = static_cast<int64_t>(std::llround(a.switch_s * 1e9));
    so.device_speed = speed;
    // The deployment search is its own row; every other policy runs the naive configuration, so
    // that it differs from dedicated only in how replicas are held.
    const auto& models = p == "search" ? searched_models : naive_models;
    auto r = sim::run_simulation(**w, models, acc, so);
    if (!r.is_ok()) return fail(r.status().with_context("policy " + p));
    r->policy = p;
    std::fprintf(stderr, "tessera sim: %s: %lld events in %.2f s (%.2f M events/s), peak RSS %.0f MiB\n",
                 p.c_str(), static_cast<long long>(r->events), r->wall_s,
                 r->events / std::max(1e-9, r->wall_s) * 1e-6, r->peak_rss_bytes / 1048576.0);
    results.push_back(std::move(r).value());
  }

  std::printf("tessera sim: %s\n", workload_description.c_str());
  std::printf("tessera sim: %s, TTFT SLO %.2f s, TPOT SLO %.0f ms, keep-alive %.0f s\n",
              acc.name.c_str(), a.ttft_slo_s, a.tpot_slo_s * 1e3, a.keep_alive_s);
  std::fputs(sim::headline_table(results).c_str(), stdout);

  nlohmann::json setup = {{"workload", workload_description},
                          {"accelerator", acc.name},
                          {"costs", measured ? "measured: " + a.bench_record : "roofline"},
                          {"ttft_slo_s", a.ttft_slo_s},
                          {"tpot_slo_s", a.tpot_slo_s},
                          {"keep_alive_s", a.keep_alive_s},
                          {"models", wmodels.size()},
                          {"seed", a.seed}};
  const nlohmann::json report = sim::sim_report_json(setup, results);
  if (!a.json_out.empty()) {
    std::ofstream(a.json_out) << report.dump(2) << "\n";
    std::printf("tessera sim: wrote %s\n", a.json_out.c_str());
  }
  if (!a.html_out.empty()) {
    const std::string chart_js = load_chart_js(a.chartjs);
    std::ofstream(a.html_out) << sim::render_sim_report_html(report, chart_js);
    std::printf("tessera sim: wrote %s%s\n", a.html_out.c_str(),
                chart_js.empty() ? " (no Chart.js: tables only)" : "");
  }
  if (!a.requests_out.empty()) {
    std::ofstream out(a.requests_out);
    out << "policy,model,t_s,ttft_s,cold\n";
    for (const auto& r : results) {
      for (const auto& q : r.request_log) {
        out << r.policy << "," << wmodels[static_cast<size_t>(q.model)].name << ","
            << fmt::format("{:.6f},{:.6f},{}", q.t_s, q.ttft_s, q.cold ? 1 : 0) << "\n";
      }
    }
    if (!out) return fail("cannot write " + a.requests_out);
    std::printf("tessera sim: wrote %s\n", a.requests_out.c_str());
  }
  if (!a.iterations_out.empty()) {
    std::ofstream out(a.iterations_out);
    out << "policy,model,asked_s,granted_s,released_s,prefill_rows,decode_rows\n";
    for (const auto& r : results) {
      for (const auto& it : r.iteration_log) {
        out << r.policy << "," << wmodels[static_cast<size_t>(it.model)].name << ","
            << fmt::format("{:.6f},{:.6f},{:.6f},{},{}", it.asked_s, it.granted_s, it.released_s,
                           it.prefill_rows, it.decode_rows)
            << "\n";
      }
    }
    if (!out) return fail("cannot write " + a.iterations_out);
    std::printf("tessera sim: wrote %s\n", a.iterations_out.c_str());
  }
  if (!a.trace_out.empty()) {
    std::vector<sim::SimTransition> all;
    for (const auto& r : results) {
      for (auto t : r.transitions) {
        t.slot = r.policy + "/" + t.slot;
        all.push_back(std::move(t));
      }
    }
    std::ofstream(a.trace_out) << sim::chrome_trace_json(all).dump() << "\n";
    std::printf("tessera sim: wrote %s (%zu transitions)\n", a.trace_out.c_str(), all.size());
  }
  return 0;
}

}  // namespace

void add_sim_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand(
      "sim", "Simulate a fleet serving many models under each idle/scaling policy (the live "
             "server's own FleetController over cost models)");
  auto a = std::make_shared<SimArgs>();
  cmd->add_option("--servegen", a->servegen, "ServeGen traces (a root or one category folder)")
      ->capture_default_str();
  cmd->add_option("--trace", a->trace, "Replay one recorded trace (azure, mooncake, splitwise) instead");
  cmd->add_option("--schedule", a->schedule,
                  "Replay an exact schedule (`tessera bench fleet --arrivals-out`) instead");
  cmd->add_option("--schedule-span", a->schedule_s,
                  "--schedule: seconds simulated (0: to the last arrival + 1 s)");
  cmd->add_option("--models", a->models, "Models (ServeGen clients replayed with day offsets)")
      ->capture_default_str();
  cmd->add_option("--hours", a->hours, "Simulated hours")->capture_default_str();
  cmd->add_option("--rate-scale", a->rate_scale, "Multiplies every ServeGen rate")->capture_default_str();
  cmd->add_option("--max-peak-rps", a->max_peak_rps, "Cap each model's busiest window (0: none)");
  cmd->add_option("--time-scale", a->time_scale, "--trace: divide its times by this");
  cmd->add_option("--lengths", a->lengths, "Request lengths sampled from this trace")->capture_default_str();
  cmd->add_option("--fixed-lengths", a->fixed_input, "Fixed prompt tokens instead of a length trace");
  cmd->add_option("--fixed-output", a->fixed_output, "Fixed output tokens (with --fixed-lengths)");
  cmd->add_option("--max-input", a->max_input, "Clip prompts")->capture_default_str();
  cmd->add_option("--max-output", a->max_output, "Clip outputs")->capture_default_str();
  cmd->add_option("--accelerator", a->accelerator, "h100, h200 or tpu-v5e")->capture_default_str();
  cmd->add_option("--accelerator-json", a->accelerator_json, "An accelerator spec (JSON) instead");
  cmd->add_option("--shape", a->shape, "One model shape for every model (default: by ServeGen category)");
  cmd->add_option("--dtype", a->dtype, "Weight type of the shapes")->capture_default_str();
  cmd->add_option("--bench-record", a->bench_record,
                  "This machine's costs: a `tessera bench model --json` record (every model one replica)");
  cmd->add_option("--resume-record", a->resume_record, "With --bench-record: a `bench resume --json` record");
  cmd->add_option("--decode-step-s", a->decode_step_s,
                  "With --bench-record: seconds of a one-row step instead of the record's (e.g. "
                  "fitted to a live run's device accounting, `bench fleet --json`)");
  cmd->add_option("--row-s", a->row_s,
                  "With --bench-record: seconds per further row of a step instead of the record's");
  cmd->add_option("--resume-s", a->resume_s,
                  "With --bench-record: seconds per resume instead of the resume record's");
  cmd->add_option("--suspend-s", a->suspend_s,
                  "With --bench-record: seconds per suspension instead of the resume record's");
  cmd->add_option("--step-multipliers", a->step_multipliers,
                  "With --device-arbitration: CSV of measured iteration time / cost-model time "
                  "(header, then 'multiplier,switch,prompt' rows, the last two 0/1); each "
                  "iteration's time is multiplied by a seeded draw from the rows of its kind "
                  "(prompt rows or not; another replica ran the previous iteration or not)");
  cmd->add_option("--device-speed", a->device_speed,
                  "With --device-arbitration: CSV of the device's speed over time (header, then "
                  "'t_s,factor' rows, times increasing): an iteration granted at t takes its "
                  "cost times the factor of the last row at or before t (e.g. measured per "
                  "window in a live run, scripts/sim_validate_compare.py)");
  cmd->add_option("--switch-s", a->switch_s,
                  "With --device-arbitration: seconds an iteration takes longer when another "
                  "replica ran the device's previous iteration (a hand-off; e.g. fitted to a live "
                  "run's iterations, `bench fleet --iterations-out`)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--step-block", a->step_block,
                  "With --step-multipliers: take them in blocks of this many iterations of the "
                  "file's order (a block bootstrap: keeps its slow and fast stretches) instead of "
                  "independent draws; 0: independent")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--iterations-out", a->iterations_out,
                  "With --device-arbitration: write every iteration of the shared device as CSV "
                  "(policy, model, asked, granted, released, prompt and decode rows)");
  cmd->add_option("--requests-out", a->requests_out,
                  "Write every request's outcome (policy,model,t_s,ttft_s,cold; ttft -1: refused), "
                  "for small runs compared with `bench fleet --requests-out`");
  cmd->add_option("--max-running", a->max_running, "With --bench-record: the engine's batch limit");
  cmd->add_flag("--shared-device", a->shared_device,
                "Every replica time-shares one device (as `serve --models` does on one machine)");
  cmd->add_flag("--device-arbitration", a->device_arbitration,
                "With --shared-device: grant the device one iteration at a time by the live "
                "DeviceScheduler's rule (deadlines, then least service) instead of sharing it");
  cmd->add_option("--max-batch-tokens", a->max_batch_tokens,
                  "With --bench-record: the engine's rows per iteration (the engine's default: 512)");
  cmd->add_option("--active-bytes", a->active_bytes,
                  "With --bench-record: weights + KV pool of a replica (as the live fleet reports)");
  cmd->add_option("--policy", a->policies,
                  "all, or a comma list of dedicated, search, keep-alive, adaptive, scaling, pooled")
      ->capture_default_str();
  cmd->add_option("--histogram-bin", a->histogram_bin_s,
                  "adaptive: idle-time histogram bin, seconds (240 bins)")->capture_default_str();
  cmd->add_option("--headroom", a->headroom,
                  "Replicas are sized for this multiple of a model's busiest 10-minute rate")
      ->capture_default_str();
  cmd->add_option("--keep-alive", a->keep_alive_s, "Seconds idle before a suspend")->capture_default_str();
  cmd->add_option("--ttft-slo", a->ttft_slo_s, "TTFT SLO, seconds")->capture_default_str();
  cmd->add_option("--tpot-slo", a->tpot_slo_s, "TPOT SLO for the deployment search, seconds")
      ->capture_default_str();
  cmd->add_option("--pool-accelerators", a->pool_accelerators, "pooled: accelerators per node")
      ->capture_default_str();
  cmd->add_option("--pool-max-models", a->pool_max_models, "pooled: model replicas per node at most")
      ->capture_default_str();
  cmd->add_option("--pool-overcommit", a->pool_overcommit,
                  "pooled: active bytes of a node's replicas over its memory, at most")
      ->capture_default_str();
  cmd->add_option("--pool-fill", a->pool_fill,
                  "pooled: expected resident bytes of a node's replicas over its memory, at most")
      ->capture_default_str();
  cmd->add_option("--deadline", a->deadline_s, "Seconds a queued request waits for its model")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Workload seed")->capture_default_str();
  cmd->add_option("--json", a->json_out, "Write the report as JSON");
  cmd->add_option("--html", a->html_out, "Write the report as HTML with charts");
  cmd->add_option("--chartjs", a->chartjs, "Chart.js UMD file for --html");
  cmd->add_option("--chrome-trace", a->trace_out, "Write lifecycle moves as a Chrome trace (small runs)");
  cmd->add_option("--trace-events", a->trace_events, "Transitions kept per policy for --chrome-trace")
      ->capture_default_str();
  cmd->callback([a, &run] { run = [a] { return run_sim(*a); }; });
}

}  // namespace tessera::cli
