// `tessera bench fleet`: many models, one device, ServeGen clients' arrivals (one client per
// model, time-compressed), replayed once per idle policy, side by side in one run.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "tessera/base/log.h"
#include "tessera/bench/fleet_bench.h"
#include "tessera/serve/fleet_config.h"

namespace tessera::cli {
namespace {

struct FleetBenchArgs {
  bench::FleetBenchOptions bench;  // models (read below), clients, policies, replay, outputs
  std::string config;
  std::string models_dir;
  int64_t ctx_size = 512;
  int parallel = 2;
  bool no_shared_device = false;
  bool json = false;
  std::string arrivals_out;  // the schedule replayed, for `tessera sim --schedule`
  bool arrivals_only = false;  // write arrivals_out and stop (a schedule for another replayer)
};

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

void print_plan(const bench::FleetBenchOptions& b, const bench::FleetReplayOptions& run) {
  std::printf("fleet replay: %zu models, ServeGen %s windows %lld..%lld (10 min each) compressed "
              "%.0fx, busiest window %.2f req/s per model, prompt %d + %d tokens, TTFT SLO %.1f s, "
              "keep-alive %.0f s trace time (%.2f s replayed), %s\n",
              run.models.size(), b.servegen_dir.c_str(),
              static_cast<long long>(b.replay.first_window),
              static_cast<long long>(b.replay.first_window + b.replay.n_windows - 1),
              b.replay.time_scale, b.replay.peak_rps, run.prompt_tokens, run.max_tokens,
              run.ttft_slo_s, run.keep_alive_s, run.keep_alive_s / b.replay.time_scale,
              run.shared_device ? "one shared device" : "a thread pool per model");
  for (const auto& m : run.models) {
    std::printf("  %-32s <- %-16s %5zu requests\n", m.spec.name.c_str(), m.source.c_str(),
                m.arrivals_s.size());
  }
  std::fflush(stdout);
}

void print_table(const std::vector<bench::FleetReplayResult>& results) {
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
}

int run_bench_fleet(FleetBenchArgs a) {
  if (a.config.empty() == a.models_dir.empty()) return fail("pass --config FILE or --models DIR");
  auto specs = model_specs(a);
  if (!specs.is_ok()) return fail(specs.status());
  a.bench.specs = std::move(specs).value();
  a.bench.run.shared_device = !a.no_shared_device;
  auto run = bench::plan_fleet_bench(a.bench);
  if (!run.is_ok()) return fail(run.status());
  if (!a.arrivals_out.empty()) {
    if (Status s = bench::write_fleet_arrivals(a.arrivals_out, *run); !s.is_ok()) return fail(s);
  }
  if (a.arrivals_only) {
    if (a.arrivals_out.empty()) return fail("--arrivals-only needs --arrivals-out FILE");
    return 0;
  }
  if (!a.json) print_plan(a.bench, *run);
  auto result = bench::run_fleet_bench(a.bench, *run, [&a](const bench::FleetReplayResult& r) {
    if (a.json) return;
    std::printf("  ran %s: %.1f s\n", r.policy.c_str(), r.duration_s);
    std::fflush(stdout);
  });
  if (!result.is_ok()) return fail(result.status());
  if (a.json) {
    std::printf("%s\n", bench::fleet_bench_json(a.bench, *run, *result).dump().c_str());
  } else {
    print_table(result->results);
  }
  return 0;
}

// The span of the traces replayed and each request.
void add_replay_flags(CLI::App* c, FleetBenchArgs* a) {
  bench::FleetBenchOptions& b = a->bench;
  c->add_option("--first-window", b.replay.first_window, "First 10-minute window of the span")
      ->capture_default_str();
  c->add_option("--windows", b.replay.n_windows, "Windows in the span (144: one day)")
      ->capture_default_str();
  c->add_option("--time-scale", b.replay.time_scale, "Trace seconds per replay second")
      ->capture_default_str();
  c->add_option("--peak-rps", b.replay.peak_rps,
                "Replay rate of each client's busiest window in the span")
      ->capture_default_str();
  c->add_option("--seed", b.replay.seed, "Arrival and prompt seed")->capture_default_str();
  c->add_option("--keep-alive", b.run.keep_alive_s,
                "Fixed keep-alive (adaptive: fallback), trace seconds")
      ->capture_default_str();
  c->add_option("--ttft-slo", b.run.ttft_slo_s, "TTFT SLO, seconds")->capture_default_str();
  c->add_option("--prompt-tokens", b.run.prompt_tokens, "Prompt tokens per request")
      ->capture_default_str();
  c->add_option("--max-tokens", b.run.max_tokens, "Generated tokens per request")
      ->capture_default_str();
}

// The models' engines, the device, and what the run writes.
void add_fleet_run_flags(CLI::App* c, FleetBenchArgs* a) {
  bench::FleetBenchOptions& b = a->bench;
  c->add_option("--ctx-size", a->ctx_size, "Positions per sequence (config entries may override)")->capture_default_str();
  c->add_option("--parallel", a->parallel, "Sequences per model (config entries may override)")->capture_default_str();
  c->add_option("--threads,-t", b.run.threads, "Threads of the shared device (0: all cores)");
  c->add_option("--mem-budget-bytes", b.run.active_budget_bytes, "Active memory budget (0: none)")
      ->capture_default_str();
  c->add_option("--keep-prefix-cache", b.run.keep_prefix_bytes,
                "Bytes of prefix-cache blocks a suspended model keeps and restores on resume "
                "(0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_flag("--no-shared-device", a->no_shared_device,
              "Give each model its own thread pool instead of one shared device (comparison)");
  c->add_flag("--warmup", b.run.warmup,
              "Serve one request per model before each replay starts, not counted (a new "
              "engine's first iterations touch its buffers)");
  c->add_flag("--json", a->json, "Print a JSON record");
  c->add_option("--arrivals-out", a->arrivals_out,
                "Write the arrival schedule (model,t_s,input_tokens,output_tokens) for `tessera sim "
                "--schedule`");
  c->add_flag("--arrivals-only", a->arrivals_only,
              "Write --arrivals-out and stop, without replaying (a ServeGen schedule for another "
              "replayer, e.g. a cluster's router)");
  c->add_option("--iterations-out", b.iterations_out,
                "Write every iteration on the shared device as CSV (policy, model, asked, granted, "
                "acquired and released in replay seconds, prompt and decode rows)");
  c->add_option("--requests-out", b.requests_out,
                "Write every request's TTFT and whether it was a cold start (policy,model,t_s,ttft_s,cold; ttft -1: failed), for a "
                "side-by-side comparison with `tessera sim --requests-out`");
}

}  // namespace

void add_bench_fleet_command(CLI::App* bench, RunFn& run) {
  auto a = std::make_shared<FleetBenchArgs>();
  bench::FleetBenchOptions& b = a->bench;
  CLI::App* c = bench->add_subcommand(
      "fleet", "Many models on one device, ServeGen clients replayed once per idle policy");
  c->add_option("--config", a->config, "Fleet config file (as `serve --config`)");
  c->add_option("--models", a->models_dir, "Every *.gguf in DIR, one model each");
  c->add_option("--servegen", b.servegen_dir,
                "Directory of ServeGen client traces (chunk-N-trace.csv), one client per model")
      ->required();
  c->add_option("--clients", b.clients,
                "Client file stems, comma-separated, one per model in order (default: picked "
                "evenly from sparse to busy)");
  c->add_option("--policies", b.policies, "Idle policies to compare, comma-separated")
      ->capture_default_str();
  add_replay_flags(c, a.get());
  add_fleet_run_flags(c, a.get());
  c->callback([&run, a] { run = [a] { return run_bench_fleet(*a); }; });
}

}  // namespace tessera::cli
