// `tessera bench fleet`: many models, one device, ServeGen clients' arrivals (one client per
// model, time-compressed), replayed once per idle policy, side by side in one run.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <tuple>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/fleet_replay.h"
#include "tessera/base/log.h"
#include "tessera/bench/servegen.h"
#include "tessera/serve/fleet_config.h"

namespace tessera::cli {
namespace {

struct FleetBenchArgs {
  std::string config;
  std::string models_dir;
  std::string servegen_dir;
  std::string clients;   // comma-separated file stems; empty: picked by activity
  std::string policies = "always-on,fixed,adaptive";
  bench::ServeGenReplayOptions replay;
  bench::FleetReplayOptions run;
  int64_t ctx_size = 512;
  int parallel = 2;
  bool no_shared_device = false;
  bool json = false;
  std::string arrivals_out;  // the schedule replayed, for `tessera sim --schedule`
  bool arrivals_only = false;  // write arrivals_out and stop (a schedule for another replayer)
  std::string requests_out;  // every request's TTFT per policy, for side-by-side comparisons
  std::string iterations_out;  // the shared device's iterations per policy
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Result<std::vector<fleet::FleetModelSpec>> model_specs(const FleetBenchArgs& a) {
  engine::EngineOptions d;
  d.ctx_size = a.ctx_size;
  d.max_running = a.parallel;
  if (a.config.empty()) return serve::fleet_specs_from_dir(a.models_dir, d);
  TS_ASSIGN_OR_RETURN(std::vector<fleet::FleetModelSpec> specs,
                      serve::read_fleet_config(a.config, d, fleet::IdlePolicySettings{}));
  // The benchmark compares fleet-wide policies (with keep-alives scaled to the replay's time
  // compression): a model's own idle policy from the config would blur that comparison.
  for (auto& s : specs) {
    if (s.idle_policy) {
      log_warn("bench fleet: {}: its own idle policy in the config is ignored", s.name);
      s.idle_policy = nullptr;
    }
  }
  return specs;
}

// One client per model: the named ones, else clients with traffic in the span, ranked by how
// many windows they are active in and picked evenly over that ranking (sparse to busy).
Result<std::vector<std::pair<std::string, std::vector<bench::ServeGenWindow>>>> pick_clients(
    const FleetBenchArgs& a, size_t n) {
  std::vector<std::pair<std::string, std::vector<bench::ServeGenWindow>>> all;
  std::vector<std::string> names = split(a.clients);
  if (names.empty()) {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(a.servegen_dir, ec)) {
      if (f.path().extension() == ".csv") names.push_back(f.path().stem().string());
    }
    if (ec) return invalid_argument(fmt::format("--servegen {}: {}", a.servegen_dir, ec.message()));
    std::sort(names.begin(), names.end());
  }
  for (const auto& name : names) {
    auto w = bench::load_servegen_client(
        (std::filesystem::path(a.servegen_dir) / (name + ".csv")).string());
    if (!w.is_ok()) return w.status();
    all.emplace_back(name, std::move(w).value());
  }
  if (!a.clients.empty()) {
    if (all.size() != n) {
      return invalid_argument(fmt::format("--clients names {} clients for {} models", all.size(), n));
    }
    return all;
  }
  const auto active = [&](const std::vector<bench::ServeGenWindow>& w) {
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
  std::vector<std::pair<std::string, std::vector<bench::ServeGenWindow>>> picked;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = n == 1 ? all.size() - 1 : i * (all.size() - 1) / (n - 1);
    picked.push_back(all[k]);
  }
  return picked;
}

int run_bench_fleet(FleetBenchArgs a) {
  if (a.config.empty() == a.models_dir.empty()) return fail("pass --config FILE or --models DIR");
  auto specs = model_specs(a);
  if (!specs.is_ok()) return fail(specs.status());
  auto clients = pick_clients(a, specs->size());
  if (!clients.is_ok()) return fail(clients.status());
  a.run.time_scale = a.replay.time_scale;
  a.run.shared_device = !a.no_shared_device;
  a.run.models.clear();
  for (size_t m = 0; m < specs->size(); ++m) {
    bench::FleetReplayModel fm;
    fm.spec = (*specs)[m];
    bench::ServeGenReplayOptions ro = a.replay;
    ro.seed = a.replay.seed + m;
    fm.arrivals_s = bench::servegen_arrivals((*clients)[m].second, ro);
    fm.source = (*clients)[m].first;
    a.run.models.push_back(std::move(fm));
  }
  if (!a.arrivals_out.empty()) {
    // Every request in time order: what `tessera sim --schedule` replays to compare with this run.
    std::vector<std::tuple<double, size_t>> all;
    for (size_t m = 0; m < a.run.models.size(); ++m) {
      for (double t : a.run.models[m].arrivals_s) all.emplace_back(t, m);
    }
    std::sort(all.begin(), all.end());
    std::ofstream out(a.arrivals_out);
    out << "model,t_s,input_tokens,output_tokens\n";
    for (const auto& [t, m] : all) {
      out << a.run.models[m].spec.name << "," << fmt::format("{:.6f}", t) << ","
          << a.run.prompt_tokens << "," << a.run.max_tokens << "\n";
    }
    if (!out) return fail("cannot write " + a.arrivals_out);
  }
  if (a.arrivals_only) {
    if (a.arrivals_out.empty()) return fail("--arrivals-only needs --arrivals-out FILE");
    return 0;
  }
  if (!a.json) {
    std::printf("fleet replay: %zu models, ServeGen %s windows %lld..%lld (10 min each) compressed "
                "%.0fx, busiest window %.2f req/s per model, prompt %d + %d tokens, TTFT SLO %.1f s, "
                "keep-alive %.0f s trace time (%.2f s replayed), %s\n",
                a.run.models.size(), a.servegen_dir.c_str(),
                static_cast<long long>(a.replay.first_window),
                static_cast<long long>(a.replay.first_window + a.replay.n_windows - 1),
                a.replay.time_scale, a.replay.peak_rps, a.run.prompt_tokens, a.run.max_tokens,
                a.run.ttft_slo_s, a.run.keep_alive_s, a.run.keep_alive_s / a.replay.time_scale,
                a.run.shared_device ? "one shared device" : "a thread pool per model");
    for (const auto& m : a.run.models) {
      std::printf("  %-32s <- %-16s %5zu requests\n", m.spec.name.c_str(), m.source.c_str(),
                  m.arrivals_s.size());
    }
    std::fflush(stdout);
  }
  std::ofstream requests_out;
  if (!a.requests_out.empty()) {
    requests_out.open(a.requests_out);
    requests_out << "policy,model,t_s,ttft_s,cold\n";
    if (!requests_out) return fail("cannot write " + a.requests_out);
  }
  std::ofstream iterations_out;
  if (!a.iterations_out.empty()) {
    a.run.record_iterations = true;
    iterations_out.open(a.iterations_out);
    iterations_out << "policy,model,asked_s,granted_s,acquired_s,released_s,prefill_rows,decode_rows\n";
    if (!iterations_out) return fail("cannot write " + a.iterations_out);
  }
  nlohmann::json records = nlohmann::json::array();
  std::vector<bench::FleetReplayResult> results;
  for (const std::string& policy : split(a.policies)) {
    a.run.policy = policy;
    auto r = bench::run_fleet_replay(a.run);
    if (!r.is_ok()) return fail(r.status().with_context("policy " + policy));
    results.push_back(*r);
    if (requests_out.is_open()) {
      for (const auto& q : r->requests_log) {
        requests_out << policy << "," << a.run.models[q.model].spec.name << ","
                     << fmt::format("{:.6f},{:.6f},{}", q.t_s, q.ttft_s, q.cold ? 1 : 0) << "\n";
      }
      if (!requests_out.flush()) return fail("cannot write " + a.requests_out);
    }
    if (iterations_out.is_open()) {
      for (const auto& it : r->iterations_log) {
        iterations_out << policy << "," << a.run.models[it.model].spec.name << ","
                       << fmt::format("{:.6f},{:.6f},{:.6f},{:.6f},{},{}", it.asked_s, it.granted_s,
                                      it.acquired_s, it.released_s, it.prefill_rows, it.decode_rows)
                       << "\n";
      }
      if (!iterations_out.flush()) return fail("cannot write " + a.iterations_out);
    }
    nlohmann::json per_model = nlohmann::json::array();
    for (const auto& m : r->models) {
      per_model.push_back({{"model", m.name}, {"client", m.source}, {"requests", m.requests},
                           {"errors", m.errors}, {"cold_starts", m.cold_starts},
                           {"resumes", m.resumes}, {"slo_met", m.slo_met},
                           {"memory_gb_s", m.memory_gb_s}, {"idle_memory_gb_s", m.idle_memory_gb_s},
                           {"active_bytes", m.active_bytes}, {"device_grants", m.device_grants},
                           {"device_busy_s", m.device_busy_s}, {"device_wait_s", m.device_wait_s},
                           {"prefill_grants", m.prefill_grants}, {"prefill_rows", m.prefill_rows},
                           {"prefill_held_s", m.prefill_held_s}, {"decode_grants", m.decode_grants},
                           {"decode_rows", m.decode_rows}, {"decode_held_s", m.decode_held_s},
                           {"suspends", m.suspends}, {"mean_resume_s", m.mean_resume_s},
                           {"mean_suspend_s", m.mean_suspend_s}});
    }
    records.push_back({{"policy", policy}, {"duration_s", r->duration_s},
                       {"requests", r->requests}, {"errors", r->errors},
                       {"cold_starts", r->cold_starts}, {"slo_attainment", r->slo_attainment()},
                       {"ttft_p50_s", r->ttft_p50_s}, {"ttft_p99_s", r->ttft_p99_s},
                       {"memory_gb_s", r->memory_gb_s}, {"idle_memory_gb_s", r->idle_memory_gb_s},
                       {"max_dispatch_lag_s", r->max_dispatch_lag_s}, {"models", per_model}});
    if (!a.json) {
      std::printf("  ran %s: %.1f s\n", policy.c_str(), r->duration_s);
      std::fflush(stdout);
    }
  }
  if (a.json) {
    nlohmann::json j = {{"environment", bench::describe_environment(a.run.threads)},
                        {"servegen", a.servegen_dir},
                        {"first_window", a.replay.first_window},
                        {"windows", a.replay.n_windows},
                        {"time_scale", a.replay.time_scale},
                        {"peak_rps", a.replay.peak_rps},
                        {"keep_alive_s", a.run.keep_alive_s},
                        {"ttft_slo_s", a.run.ttft_slo_s},
                        {"prompt_tokens", a.run.prompt_tokens},
                        {"max_tokens", a.run.max_tokens},
                        {"shared_device", a.run.shared_device},
                        {"warmup", a.run.warmup}, {"keep_prefix_bytes", a.run.keep_prefix_bytes},
                        {"policies", records}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  const double base = results.empty() ? 0.0 : results.front().memory_gb_s;
  std::printf("\n  %-10s %9s %12s %9s %9s %9s %9s %9s %8s\n", "policy", "memory", "vs first",
              "idle mem", "requests", "errors", "cold", "TTFT p50", "p99");
  std::printf("  %-10s %9s %12s %9s %9s %9s %9s %9s %8s   SLO met\n", "", "GB*s", "", "GB*s", "", "",
              "starts", "ms", "ms");
  for (const auto& r : results) {
    std::printf("  %-10s %9.2f %11.1f%% %9.2f %9lld %9lld %9lld %9.1f %8.1f   %.2f%%\n",
                r.policy.c_str(), r.memory_gb_s,
                base > 0 ? 100.0 * (r.memory_gb_s - base) / base : 0.0, r.idle_memory_gb_s,
                static_cast<long long>(r.requests), static_cast<long long>(r.errors),
                static_cast<long long>(r.cold_starts), r.ttft_p50_s * 1e3, r.ttft_p99_s * 1e3,
                100.0 * r.slo_attainment());
  }
  return 0;
}

}  // namespace

void add_bench_fleet_command(CLI::App* bench, RunFn& run) {
  auto a = std::make_shared<FleetBenchArgs>();
  CLI::App* c = bench->add_subcommand(
      "fleet", "Many models on one device, ServeGen clients replayed once per idle policy");
  c->add_option("--config", a->config, "Fleet config file (as `serve --config`)");
  c->add_option("--models", a->models_dir, "Every *.gguf in DIR, one model each");
  c->add_option("--servegen", a->servegen_dir,
                "Directory of ServeGen client traces (chunk-N-trace.csv), one client per model")
      ->required();
  c->add_option("--clients", a->clients,
                "Client file stems, comma-separated, one per model in order (default: picked "
                "evenly from sparse to busy)");
  c->add_option("--policies", a->policies, "Idle policies to compare, comma-separated")
      ->capture_default_str();
  c->add_option("--first-window", a->replay.first_window, "First 10-minute window of the span")
      ->capture_default_str();
  c->add_option("--windows", a->replay.n_windows, "Windows in the span (144: one day)")
      ->capture_default_str();
  c->add_option("--time-scale", a->replay.time_scale, "Trace seconds per replay second")
      ->capture_default_str();
  c->add_option("--peak-rps", a->replay.peak_rps,
                "Replay rate of each client's busiest window in the span")
      ->capture_default_str();
  c->add_option("--seed", a->replay.seed, "Arrival and prompt seed")->capture_default_str();
  c->add_option("--keep-alive", a->run.keep_alive_s,
                "Fixed keep-alive (adaptive: fallback), trace seconds")
      ->capture_default_str();
  c->add_option("--ttft-slo", a->run.ttft_slo_s, "TTFT SLO, seconds")->capture_default_str();
  c->add_option("--prompt-tokens", a->run.prompt_tokens, "Prompt tokens per request")
      ->capture_default_str();
  c->add_option("--max-tokens", a->run.max_tokens, "Generated tokens per request")
      ->capture_default_str();
  c->add_option("--ctx-size", a->ctx_size, "Positions per sequence (config entries may override)")->capture_default_str();
  c->add_option("--parallel", a->parallel, "Sequences per model (config entries may override)")->capture_default_str();
  c->add_option("--threads,-t", a->run.threads, "Threads of the shared device (0: all cores)");
  c->add_option("--mem-budget-bytes", a->run.active_budget_bytes, "Active memory budget (0: none)")
      ->capture_default_str();
  c->add_option("--keep-prefix-cache", a->run.keep_prefix_bytes,
                "Bytes of prefix-cache blocks a suspended model keeps and restores on resume "
                "(0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_flag("--no-shared-device", a->no_shared_device,
              "Give each model its own thread pool instead of one shared device (comparison)");
  c->add_flag("--warmup", a->run.warmup,
              "Serve one request per model before each replay starts, not counted (a new "
              "engine's first iterations touch its buffers)");
  c->add_flag("--json", a->json, "Print a JSON record");
  c->add_option("--arrivals-out", a->arrivals_out,
                "Write the arrival schedule (model,t_s,input_tokens,output_tokens) for `tessera sim "
                "--schedule`");
  c->add_flag("--arrivals-only", a->arrivals_only,
              "Write --arrivals-out and stop, without replaying (a ServeGen schedule for another "
              "replayer, e.g. a cluster's router)");
  c->add_option("--iterations-out", a->iterations_out,
                "Write every iteration on the shared device as CSV (policy, model, asked, granted, "
                "acquired and released in replay seconds, prompt and decode rows)");
  c->add_option("--requests-out", a->requests_out,
                "Write every request's TTFT and whether it was a cold start (policy,model,t_s,ttft_s,cold; ttft -1: failed), for a "
                "side-by-side comparison with `tessera sim --requests-out`");
  c->callback([&run, a] { run = [a] { return run_bench_fleet(*a); }; });
}

}  // namespace tessera::cli
