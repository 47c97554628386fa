#include "tessera/bench/fleet_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "tessera/bench/environment.h"

namespace tessera::bench {
namespace fleet_bench {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Result<std::vector<ServeGenClient>> load_clients(const FleetBenchOptions& a) {
  std::vector<std::string> names = split_list(a.clients);
  if (names.empty()) {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(a.servegen_dir, ec)) {
      if (f.path().extension() == ".csv") names.push_back(f.path().stem().string());
    }
    if (ec) return invalid_argument(fmt::format("--servegen {}: {}", a.servegen_dir, ec.message()));
    std::sort(names.begin(), names.end());
  }
  std::vector<ServeGenClient> all;
  for (const auto& name : names) {
    auto w = load_servegen_client((std::filesystem::path(a.servegen_dir) / (name + ".csv")).string());
    if (!w.is_ok()) return w.status();
    all.emplace_back(name, std::move(w).value());
  }
  return all;
}

nlohmann::json model_record(const FleetReplayModelResult& m) {
  return {{"model", m.name}, {"client", m.source}, {"requests", m.requests},
          {"errors", m.errors}, {"cold_starts", m.cold_starts},
          {"resumes", m.resumes}, {"slo_met", m.slo_met},
          {"memory_gb_s", m.memory_gb_s}, {"idle_memory_gb_s", m.idle_memory_gb_s},
          {"active_bytes", m.active_bytes}, {"device_grants", m.device_grants},
          {"device_busy_s", m.device_busy_s}, {"device_wait_s", m.device_wait_s},
          {"prefill_grants", m.prefill_grants}, {"prefill_rows", m.prefill_rows},
          {"prefill_held_s", m.prefill_held_s}, {"decode_grants", m.decode_grants},
          {"decode_rows", m.decode_rows}, {"decode_held_s", m.decode_held_s},
          {"suspends", m.suspends}, {"mean_resume_s", m.mean_resume_s},
          {"mean_suspend_s", m.mean_suspend_s}};
}

nlohmann::json policy_record(const std::string& policy, const FleetReplayResult& r) {
  nlohmann::json per_model = nlohmann::json::array();
  for (const auto& m : r.models) per_model.push_back(model_record(m));
  return {{"policy", policy}, {"duration_s", r.duration_s},
          {"requests", r.requests}, {"errors", r.errors},
          {"cold_starts", r.cold_starts}, {"slo_attainment", r.slo_attainment()},
          {"ttft_p50_s", r.ttft_p50_s}, {"ttft_p99_s", r.ttft_p99_s},
          {"memory_gb_s", r.memory_gb_s}, {"idle_memory_gb_s", r.idle_memory_gb_s},
          {"max_dispatch_lag_s", r.max_dispatch_lag_s}, {"models", per_model}};
}

// The optional CSVs of a run, one section per policy.
class ReplayLogs {
 public:
  Status open(const FleetBenchOptions& a) {
    requests_path_ = a.requests_out;
    iterations_path_ = a.iterations_out;
    if (!requests_path_.empty()) {
      requests_.open(requests_path_);
      requests_ << "policy,model,t_s,ttft_s,cold\n";
      if (!requests_) return io_error("cannot write " + requests_path_);
    }
    if (!iterations_path_.empty()) {
      iterations_.open(iterations_path_);
      iterations_ << "policy,model,asked_s,granted_s,acquired_s,released_s,prefill_rows,decode_rows\n";
      if (!iterations_) return io_error("cannot write " + iterations_path_);
    }
    return Status::ok();
  }

  Status write(const std::string& policy, const FleetReplayOptions& run, const FleetReplayResult& r) {
    if (requests_.is_open()) {
      for (const auto& q : r.requests_log) {
        requests_ << policy << "," << run.models[q.model].spec.name << ","
                  << fmt::format("{:.6f},{:.6f},{}", q.t_s, q.ttft_s, q.cold ? 1 : 0) << "\n";
      }
      if (!requests_.flush()) return io_error("cannot write " + requests_path_);
    }
    if (iterations_.is_open()) {
      for (const auto& it : r.iterations_log) {
        iterations_ << policy << "," << run.models[it.model].spec.name << ","
                    << fmt::format("{:.6f},{:.6f},{:.6f},{:.6f},{},{}", it.asked_s, it.granted_s,
                                   it.acquired_s, it.released_s, it.prefill_rows, it.decode_rows)
                    << "\n";
      }
      if (!iterations_.flush()) return io_error("cannot write " + iterations_path_);
    }
    return Status::ok();
  }

 private:
  std::string requests_path_, iterations_path_;
  std::ofstream requests_, iterations_;
};

}  // namespace fleet_bench

Result<std::vector<ServeGenClient>> pick_servegen_clients(const FleetBenchOptions& a, size_t n) {
  TS_ASSIGN_OR_RETURN(std::vector<ServeGenClient> all, fleet_bench::load_clients(a));
  if (!a.clients.empty()) {
    if (all.size() != n) {
      return invalid_argument(fmt::format("--clients names {} clients for {} models", all.size(), n));
    }
    return all;
  }
  const auto active = [&](const std::vector<ServeGenWindow>& w) {
    int64_t k = 0;
    const int64_t end = std::min<int64_t>(a.replay.first_window + a.replay.n_windows, w.size());
    for (int64_t i = a.replay.first_window; i < end; ++i) k += w[static_cast<size_t>(i)].rate_rps > 0;
    return k;
  };
  std::erase_if(all, [&](const auto& c) { return active(c.second) == 0; });
  if (all.size() < n) {
    return invalid_argument(fmt::format("--servegen {}: {} clients have traffic in the span, need {}",
                                        a.servegen_dir, all.size(), n));
  }
  std::stable_sort(all.begin(), all.end(),
                   [&](const auto& x, const auto& y) { return active(x.second) < active(y.second); });
  std::vector<ServeGenClient> picked;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = n == 1 ? all.size() - 1 : i * (all.size() - 1) / (n - 1);
    picked.push_back(all[k]);
  }
  return picked;
}

Result<FleetReplayOptions> plan_fleet_bench(const FleetBenchOptions& a) {
  TS_ASSIGN_OR_RETURN(const std::vector<ServeGenClient> clients,
                      pick_servegen_clients(a, a.specs.size()));
  FleetReplayOptions run = a.run;
  run.time_scale = a.replay.time_scale;
  run.models.clear();
  for (size_t m = 0; m < a.specs.size(); ++m) {
    FleetReplayModel fm;
    fm.spec = a.specs[m];
    ServeGenReplayOptions ro = a.replay;
    ro.seed = a.replay.seed + m;
    fm.arrivals_s = servegen_arrivals(clients[m].second, ro);
    fm.source = clients[m].first;
    run.models.push_back(std::move(fm));
  }
  if (!a.iterations_out.empty()) run.record_iterations = true;
  return run;
}

Status write_fleet_arrivals(const std::string& path, const FleetReplayOptions& run) {
  std::vector<std::tuple<double, size_t>> all;
  for (size_t m = 0; m < run.models.size(); ++m) {
    for (double t : run.models[m].arrivals_s) all.emplace_back(t, m);
  }
  std::sort(all.begin(), all.end());
  std::ofstream out(path);
  out << "model,t_s,input_tokens,output_tokens\n";
  for (const auto& [t, m] : all) {
    out << run.models[m].spec.name << "," << fmt::format("{:.6f}", t) << "," << run.prompt_tokens
        << "," << run.max_tokens << "\n";
  }
  if (!out) return io_error("cannot write " + path);
  return Status::ok();
}

Result<FleetBenchResult> run_fleet_bench(const FleetBenchOptions& a, FleetReplayOptions run,
                                         const std::function<void(const FleetReplayResult&)>& on_policy) {
  fleet_bench::ReplayLogs logs;
  TS_RETURN_IF_ERROR(logs.open(a));
  FleetBenchResult out;
  out.records = nlohmann::json::array();
  for (const std::string& policy : fleet_bench::split_list(a.policies)) {
    run.policy = policy;
    auto r = run_fleet_replay(run);
    if (!r.is_ok()) return r.status().with_context("policy " + policy);
    TS_RETURN_IF_ERROR(logs.write(policy, run, *r));
    out.records.push_back(fleet_bench::policy_record(policy, *r));
    out.results.push_back(std::move(r).value());
    if (on_policy) on_policy(out.results.back());
  }
  return out;
}

nlohmann::json fleet_bench_json(const FleetBenchOptions& a, const FleetReplayOptions& run,
                                const FleetBenchResult& result) {
  return {{"environment", describe_environment(run.threads)},
          {"servegen", a.servegen_dir},
          {"first_window", a.replay.first_window},
          {"windows", a.replay.n_windows},
          {"time_scale", a.replay.time_scale},
          {"peak_rps", a.replay.peak_rps},
          {"keep_alive_s", run.keep_alive_s},
          {"ttft_slo_s", run.ttft_slo_s},
          {"prompt_tokens", run.prompt_tokens},
          {"max_tokens", run.max_tokens},
          {"shared_device", run.shared_device},
          {"warmup", run.warmup}, {"keep_prefix_bytes", run.keep_prefix_bytes},
          {"policies", result.records}};
}

}  // namespace tessera::bench
