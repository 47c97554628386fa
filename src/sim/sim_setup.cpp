#include "tessera/sim/sim_setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <utility>
#include <vector>

#include "tessera/sim/accelerator.h"
#include "tessera/sim/cost_model.h"
#include "tessera/sim/deployment_search.h"
#include "tessera/sim/sim_report.h"
#include "tessera/sim/simulator.h"
#include "tessera/sim/workload_schedule.h"
#include "tessera/sim/workload_servegen.h"
#include "tessera/sim/workload_trace.h"

namespace tessera::sim {

namespace sim_setup {

// The model shape a ServeGen client category stands for (its published model sizes).
std::string shape_for_source(const std::string& source) {
  if (source.find("m-large") != std::string::npos) return "llama-3-70b";
  if (source.find("m-mid") != std::string::npos) return "qwen2.5-32b";
  if (source.find("reason") != std::string::npos) return "llama-3-70b";
  return "llama-3-8b";
}

// The request lengths the options ask for: a length trace, or fixed lengths; clipped.
LengthSource length_source(const SimSetupOptions& a) {
  LengthSource ls;
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

Result<std::unique_ptr<Workload>> make_workload(const SimSetupOptions& a) {
  if (!a.schedule.empty()) return make_schedule_workload(a.schedule, a.schedule_s);
  if (!a.trace.empty()) {
    TraceWorkloadOptions t;
    t.path = a.trace;
    t.n_models = a.models;
    t.time_scale = a.time_scale;
    t.duration_s = a.hours * 3600.0;
    t.max_input_tokens = a.max_input;
    t.max_output_tokens = a.max_output;
    t.seed = a.seed;
    return make_trace_workload(t);
  }
  ServeGenWorkloadOptions o;
  o.dir = a.servegen;
  o.n_models = a.models;
  o.duration_s = a.hours * 3600.0;
  o.rate_scale = a.rate_scale;
  o.max_peak_rps = a.max_peak_rps;
  o.seed = a.seed;
  o.lengths = length_source(a);
  return make_servegen_workload(o);
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

// The measured-cost files of an arbitrated run (SimOptions::step_multipliers, step_series,
// device_speed).
struct DeviceInputs {
  std::vector<double> multipliers[2][2];
  std::vector<std::pair<double, bool>> series;
  std::vector<std::pair<int64_t, double>> speed;
};

// `--step-multipliers FILE`: a header line, then `multiplier,switch,prompt` rows (the last
// two 0 or 1), into multipliers[prompt][switch].
Status read_step_multipliers(const std::string& path, DeviceInputs& in) {
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
    in.multipliers[p][c].push_back(m);
    in.series.emplace_back(m, p == 1);
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

// The arbitrated run's flags checked against each other, and its files read.
Status read_device_inputs(const SimSetupOptions& a, DeviceInputs& in) {
  if (a.device_arbitration && !a.shared_device) {
    return invalid_argument("--device-arbitration needs --shared-device");
  }
  if (a.switch_s > 0.0 && !a.device_arbitration) {
    return invalid_argument("--switch-s needs --device-arbitration");
  }
  if (!a.device_speed.empty()) {
    if (!a.device_arbitration) return invalid_argument("--device-speed needs --device-arbitration");
    TS_RETURN_IF_ERROR(read_device_speed(a.device_speed, in.speed));
  }
  if (!a.step_multipliers.empty()) {
    if (!a.device_arbitration) {
      return invalid_argument("--step-multipliers needs --device-arbitration");
    }
    TS_RETURN_IF_ERROR(read_step_multipliers(a.step_multipliers, in));
  }
  return Status();
}

Result<nlohmann::json> read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read " + path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return Status(ErrorCode::kCorruptData, path + " is not JSON");
  return j;
}

Result<AcceleratorSpec> choose_accelerator(const SimSetupOptions& a) {
  if (a.accelerator_json.empty()) return find_accelerator(a.accelerator);
  TS_ASSIGN_OR_RETURN(const nlohmann::json j, read_json(a.accelerator_json));
  auto spec = accelerator_from_json(j);
  if (!spec.is_ok()) return spec.status().with_context(a.accelerator_json);
  return spec;
}

// Serving configurations by shape name: the naive one and the searched ones.
struct Configs {
  std::map<std::string, ServingConfig> naive;
  std::map<std::string, std::vector<ServingConfig>> searched;
};

// The one configuration measured on this machine (`bench model --json`), as "measured".
Status add_measured_config(const SimSetupOptions& a, const LengthSampler& lengths,
                           const SloTargets& slo, Configs& configs) {
  TS_ASSIGN_OR_RETURN(const nlohmann::json rec, read_json(a.bench_record));
  MeasuredCostOptions mo;
  mo.tg_step_s = a.decode_step_s;
  mo.per_row_s = a.row_s;
  if (!a.resume_record.empty()) {
    TS_ASSIGN_OR_RETURN(const nlohmann::json rr, read_json(a.resume_record));
    TS_RETURN_IF_ERROR(apply_resume_record(rr, mo));
  }
  if (a.resume_s >= 0) mo.resume_s = a.resume_s;
  if (a.suspend_s >= 0) mo.suspend_s = a.suspend_s;
  // The KV pool: the tokens that make up --active-bytes past the weights, else 64k.
  mo.kv_capacity_tokens = 65536;
  auto cost = measured_cost_from_json(rec, mo);
  if (!cost.is_ok()) return cost.status().with_context(a.bench_record);
  if (a.active_bytes > 0) {
    const int64_t kv = a.active_bytes - (*cost)->weight_bytes();
    if (kv <= 0 || (*cost)->kv_bytes_per_token() <= 0) {
      return invalid_argument(fmt::format("--active-bytes {} is not above the weights ({} bytes)",
                                          a.active_bytes, (*cost)->weight_bytes()));
    }
    mo.kv_capacity_tokens = std::max<int64_t>(1, kv / (*cost)->kv_bytes_per_token());
    cost = measured_cost_from_json(rec, mo);
    if (!cost.is_ok()) return cost.status().with_context(a.bench_record);
  }
  ServingConfig c;
  c.tp = 1;
  c.max_running = a.max_running > 0 ? a.max_running : 256;
  if (a.max_batch_tokens > 0) c.max_batch_tokens = a.max_batch_tokens;
  c.cost = std::shared_ptr<const CostModel>(std::move(cost).value());
  c.capacity_rps = replica_capacity_rps(*c.cost, c.limits(), lengths, slo, {}, &c.target_in_flight);
  configs.naive["measured"] = c;
  configs.searched["measured"] = {c};
  return Status();
}

// The naive and searched configurations of one shape on the accelerator's roofline, once.
Status add_roofline_config(const std::string& shape_name, const SimSetupOptions& a,
                           const AcceleratorSpec& acc, const LengthSampler& lengths,
                           const SloTargets& slo, Configs& configs) {
  if (configs.naive.count(shape_name)) return Status();
  TS_ASSIGN_OR_RETURN(const ModelShape shape, find_model_shape(shape_name, a.dtype));
  TS_ASSIGN_OR_RETURN(ServingConfig nc, naive_config(shape, acc, lengths, slo));
  TS_ASSIGN_OR_RETURN(std::vector<ServingConfig> sc, search_configs(shape, acc, lengths, slo));
  std::printf("tessera sim: %s on %s: naive tp %d x batch %d serves %.2f req/s per replica; "
              "searched best tp %d x batch %d serves %.2f req/s\n",
              shape_name.c_str(), acc.name.c_str(), nc.tp, nc.max_running, nc.capacity_rps,
              sc.front().tp, sc.front().max_running, sc.front().capacity_rps);
  configs.naive[shape_name] = std::move(nc);
  configs.searched[shape_name] = std::move(sc);
  return Status();
}

// Every model deployed two ways: the naive configuration (every policy but "search") and the
// cheapest searched one ("search"). Measured costs: one replica of the measured configuration.
struct Fleets {
  std::vector<SimModel> naive, searched;
};

Result<Fleets> deploy_models(const SimSetupOptions& a, const std::vector<WorkloadModel>& wmodels,
                             const AcceleratorSpec& acc, const LengthSampler& lengths,
                             const SloTargets& slo) {
  Configs configs;
  const bool measured = !a.bench_record.empty();
  if (measured) {
    TS_RETURN_IF_ERROR(add_measured_config(a, lengths, slo, configs));
  }
  Fleets f;
  for (const WorkloadModel& w : wmodels) {
    const std::string shape_name =
        measured ? "measured" : (!a.shape.empty() ? a.shape : shape_for_source(w.source));
    if (!measured) {
      TS_RETURN_IF_ERROR(add_roofline_config(shape_name, a, acc, lengths, slo, configs));
    }
    const ServingConfig& naive = configs.naive[shape_name];
    SimModel nm;
    nm.name = w.name;
    nm.shape = shape_name;
    nm.mean_rps = w.mean_rps;
    nm.deployment = measured ? Deployment{naive, 1}
                             : Deployment{naive, replicas_for(naive, w.peak_rps * a.headroom)};
    f.naive.push_back(nm);
    SimModel sm = nm;
    sm.deployment = measured ? nm.deployment
                             : cheapest_deployment(configs.searched[shape_name],
                                                   w.peak_rps * a.headroom);
    f.searched.push_back(std::move(sm));
  }
  return f;
}

std::vector<std::string> policy_names(const std::string& policies) {
  if (policies == "all") {
    return {"dedicated", "search", "keep-alive", "adaptive", "scaling", "pooled"};
  }
  std::vector<std::string> names;
  std::stringstream ss(policies);
  for (std::string p; std::getline(ss, p, ',');) names.push_back(p);
  return names;
}

// The simulator's options for policy `p` ("search" runs dedicated over the searched fleet).
SimOptions policy_options(const SimSetupOptions& a, const std::string& p, const SloTargets& slo,
                          const DeviceInputs& in) {
  SimOptions so;
  so.policy = p == "search" ? "dedicated" : p;
  so.keep_alive_s = a.keep_alive_s;
  so.shared_device = a.shared_device;
  so.round_robin = a.round_robin;
  so.slo_window = a.slo_window;
  so.device_arbitration = a.device_arbitration;
  so.histogram.bin_width_ns =
      std::max<int64_t>(1'000'000, static_cast<int64_t>(a.histogram_bin_s * 1e9));
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
    for (int c = 0; c < 2; ++c) so.step_multipliers[k][c] = in.multipliers[k][c];
  }
  so.step_seed = a.seed + 1;
  so.step_series = in.series;
  so.step_block = a.step_block;
  so.device_switch_ns = static_cast<int64_t>(std::llround(a.switch_s * 1e9));
  so.device_speed = in.speed;
  return so;
}

// Writes `header` and then what `rows` puts out to `path`, and says so.
Status write_csv(const std::string& path, const char* header,
                 const std::function<void(std::ostream&)>& rows) {
  std::ofstream out(path);
  out << header << "\n";
  rows(out);
  if (!out) return io_error("cannot write " + path);
  std::printf("tessera sim: wrote %s\n", path.c_str());
  return Status();
}

Status write_requests_csv(const std::string& path, const std::vector<SimResult>& results,
                          const std::vector<WorkloadModel>& wmodels) {
  return write_csv(path, "policy,model,t_s,ttft_s,cold", [&](std::ostream& out) {
    for (const auto& r : results) {
      for (const auto& q : r.request_log) {
        out << r.policy << "," << wmodels[static_cast<size_t>(q.model)].name << ","
            << fmt::format("{:.6f},{:.6f},{}", q.t_s, q.ttft_s, q.cold ? 1 : 0) << "\n";
      }
    }
  });
}

Status write_iterations_csv(const std::string& path, const std::vector<SimResult>& results,
                            const std::vector<WorkloadModel>& wmodels) {
  const auto rows = [&](std::ostream& out) {
    for (const auto& r : results) {
      for (const auto& it : r.iteration_log) {
        out << r.policy << "," << wmodels[static_cast<size_t>(it.model)].name << ","
            << fmt::format("{:.6f},{:.6f},{:.6f},{},{}", it.asked_s, it.granted_s, it.released_s,
                           it.prefill_rows, it.decode_rows)
            << "\n";
      }
    }
  };
  return write_csv(path, "policy,model,asked_s,granted_s,released_s,prefill_rows,decode_rows",
                   rows);
}

void write_chrome_trace(const std::string& path, const std::vector<SimResult>& results) {
  std::vector<SimTransition> all;
  for (const auto& r : results) {
    for (auto t : r.transitions) {
      t.slot = r.policy + "/" + t.slot;
      all.push_back(std::move(t));
    }
  }
  std::ofstream(path) << chrome_trace_json(all).dump() << "\n";
  std::printf("tessera sim: wrote %s (%zu transitions)\n", path.c_str(), all.size());
}

// The report files asked for, after the headline table.
Status write_outputs(const SimSetupOptions& a, const nlohmann::json& setup,
                     const std::vector<SimResult>& results,
                     const std::vector<WorkloadModel>& wmodels) {
  const nlohmann::json report = sim_report_json(setup, results);
  if (!a.json_out.empty()) {
    std::ofstream(a.json_out) << report.dump(2) << "\n";
    std::printf("tessera sim: wrote %s\n", a.json_out.c_str());
  }
  if (!a.html_out.empty()) {
    const std::string chart_js = a.chart_js ? a.chart_js() : std::string();
    std::ofstream(a.html_out) << render_sim_report_html(report, chart_js);
    std::printf("tessera sim: wrote %s%s\n", a.html_out.c_str(),
                chart_js.empty() ? " (no Chart.js: tables only)" : "");
  }
  if (!a.requests_out.empty()) {
    TS_RETURN_IF_ERROR(write_requests_csv(a.requests_out, results, wmodels));
  }
  if (!a.iterations_out.empty()) {
    TS_RETURN_IF_ERROR(write_iterations_csv(a.iterations_out, results, wmodels));
  }
  if (!a.trace_out.empty()) write_chrome_trace(a.trace_out, results);
  return Status();
}

}  // namespace sim_setup

Status run_sim_setup(const SimSetupOptions& a) {
  using namespace sim_setup;
  TS_ASSIGN_OR_RETURN(const AcceleratorSpec acc, choose_accelerator(a));
  SloTargets slo;
  slo.ttft_ns = static_cast<int64_t>(a.ttft_slo_s * 1e9);
  slo.tpot_ns = static_cast<int64_t>(a.tpot_slo_s * 1e9);

  TS_ASSIGN_OR_RETURN(std::unique_ptr<Workload> probe, make_workload(a));
  const std::vector<WorkloadModel> wmodels = probe->models();
  const std::string workload_description = probe->describe();
  probe.reset();
  TS_ASSIGN_OR_RETURN(const LengthSampler lengths, LengthSampler::make(length_source(a)));
  TS_ASSIGN_OR_RETURN(const Fleets fleets, deploy_models(a, wmodels, acc, lengths, slo));
  const std::vector<std::string> policies = policy_names(a.policies);
  DeviceInputs device;
  TS_RETURN_IF_ERROR(read_device_inputs(a, device));

  std::vector<SimResult> results;
  for (const std::string& p : policies) {
    TS_ASSIGN_OR_RETURN(std::unique_ptr<Workload> w, make_workload(a));
    // The deployment search is its own row; every other policy runs the naive configuration, so
    // that it differs from dedicated only in how replicas are held.
    auto r = run_simulation(*w, p == "search" ? fleets.searched : fleets.naive, acc,
                            policy_options(a, p, slo, device));
    if (!r.is_ok()) return r.status().with_context("policy " + p);
    r->policy = p;
    std::fprintf(stderr,
                 "tessera sim: %s: %lld events in %.2f s (%.2f M events/s), peak RSS %.0f MiB\n",
                 p.c_str(), static_cast<long long>(r->events), r->wall_s,
                 r->events / std::max(1e-9, r->wall_s) * 1e-6, r->peak_rss_bytes / 1048576.0);
    results.push_back(std::move(r).value());
  }

  std::printf("tessera sim: %s\n", workload_description.c_str());
  std::printf("tessera sim: %s, TTFT SLO %.2f s, TPOT SLO %.0f ms, keep-alive %.0f s\n",
              acc.name.c_str(), a.ttft_slo_s, a.tpot_slo_s * 1e3, a.keep_alive_s);
  std::fputs(headline_table(results).c_str(), stdout);
  const nlohmann::json setup = {
      {"workload", workload_description},
      {"accelerator", acc.name},
      {"costs", !a.bench_record.empty() ? "measured: " + a.bench_record : "roofline"},
      {"ttft_slo_s", a.ttft_slo_s},
      {"tpot_slo_s", a.tpot_slo_s},
      {"keep_alive_s", a.keep_alive_s},
      {"models", wmodels.size()},
      {"seed", a.seed}};
  return write_outputs(a, setup, results, wmodels);
}

}  // namespace tessera::sim
