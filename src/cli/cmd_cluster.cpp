// `tessera cluster`: model replicas as Slurm jobs behind one OpenAI-compatible endpoint
// (cluster/cluster_controller.h). Replicas are `tessera serve` processes submitted with sbatch;
// requests wait while a model scales from zero; idle replicas are released after --keep-alive.
// SIGINT/SIGTERM stop the router; replica jobs keep running for the next controller to adopt
// unless --release-on-exit.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "tessera/cluster/cluster_controller.h"
#include "tessera/cluster/slurm_client.h"
#include "tessera/serve/http_server.h"

namespace tessera::cli {
namespace {

struct ClusterArgs {
  std::vector<std::string> models;  // NAME=PATH
  std::vector<std::string> colocate;  // "a,b": models sharing replica jobs
  std::string name = "tessera";
  std::string host = "127.0.0.1";
  int port = 8080;
  int max_replicas = 2;
  int min_replicas = 0;
  int cpus = 1;
  int64_t memory_mb = 0;
  int replica_cap = 4;
  int replica_port_base = 18100;
  double keep_alive_s = 30.0;
  std::string idle_policy = "fixed";
  std::string suspend = "auto";
  double keep_ratio = 0.5;
  double release_kept_after_s = 120.0;
  int64_t kept_memory_mb = 0;
  int slo_window = 16;
  double deadline_s = 180.0;
  double ttft_slo_s = 2.0;
  std::string routing = "prefix";
  std::string partition;
  std::string log_dir;
  std::string slurm_bin;
  std::string chartjs;
  std::vector<std::string> serve_args;
  bool release_on_exit = false;
  int io_threads = 2;
};

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tessera") : p.string();
}

int run_cluster(const ClusterArgs& a) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  cluster::ClusterOptions o;
  o.name = a.name;
  for (const std::string& m : a.models) {
    const auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
      return fail(fmt::format("--model '{}': expected NAME=PATH", m));
    }
    cluster::ClusterModelSpec spec;
    spec.name = m.substr(0, eq);
    spec.path = std::filesystem::absolute(m.substr(eq + 1)).string();
    if (!std::filesystem::exists(spec.path)) return fail(fmt::format("--model {}: no file {}", spec.name, spec.path));
    spec.max_replicas = a.max_replicas;
    spec.min_replicas = a.min_replicas;
    spec.cpus = a.cpus;
    spec.memory_mb = a.memory_mb;
    o.models.push_back(std::move(spec));
  }
  if (o.models.empty()) return fail("give at least one --model NAME=PATH");
  for (const std::string& g : a.colocate) {
    std::vector<std::string> names;
    size_t at = 0;
    while (at <= g.size()) {
      const size_t comma = std::min(g.find(',', at), g.size());
      names.push_back(g.substr(at, comma - at));
      at = comma + 1;
    }
    o.colocate.push_back(std::move(names));
  }
  o.replica_port_base = a.replica_port_base;
  o.replica_cap = a.replica_cap;
  o.keep_alive_s = a.keep_alive_s;
  o.idle_policy = a.idle_policy;
  o.release_kept_after_s = a.release_kept_after_s;
  o.kept_memory_mb = a.kept_memory_mb;
  o.slo_window = a.slo_window;
  auto suspend = cluster::suspend_mode_from_name(a.suspend);
  if (!suspend.is_ok()) return fail(suspend.status().with_context("--suspend"));
  o.host.suspend = *suspend;
  o.host.keep_ratio = a.keep_ratio;
  o.request_deadline_s = a.deadline_s;
  o.ttft_slo_s = a.ttft_slo_s;
  auto routing = cluster::routing_policy_from_name(a.routing);
  if (!routing.is_ok()) return fail(routing.status());
  o.routing = *routing;
  o.chart_js = load_chart_js(a.chartjs);
  o.host.tessera_bin = self_path();
  o.host.serve_args = a.serve_args;
  o.host.partition = a.partition;
  o.host.log_dir = a.log_dir.empty() ? std::string() : std::filesystem::absolute(a.log_dir).string();
  if (!o.host.log_dir.empty()) std::filesystem::create_directories(o.host.log_dir);

  cluster::SlurmCliOptions so;
  so.bin_dir = a.slurm_bin;
  auto controller = cluster::ClusterController::create(std::move(o), cluster::make_slurm_cli_client(so));
  if (!controller.is_ok()) return fail(controller.status());
  cluster::ClusterController* ctl = controller->get();
  if (Status st = ctl->start(); !st.is_ok()) return fail(st.with_context("starting the cluster controller"));

  serve::HttpServerOptions ho;
  ho.host = a.host;
  ho.port = a.port;
  ho.n_threads = a.io_threads;
  serve::HttpServer server(ho, [ctl](serve::HttpRequest&& req, std::shared_ptr<serve::ResponseWriter> w) {
    ctl->handle(std::move(req), std::move(w));
  });
  if (Status st = server.start(); !st.is_ok()) return fail(st.with_context("starting the router"));
  std::printf("tessera cluster: routing on http://%s:%d (%zu models, up to %d replicas each); "
              "dashboard at /dashboard\n",
              a.host.c_str(), server.port(), a.models.size(), a.max_replicas);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  std::printf("tessera cluster: %s, stopping%s\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
              a.release_on_exit ? " and releasing the replicas" : " (replica jobs keep running)");
  std::fflush(stdout);
  server.stop(std::chrono::milliseconds(2000));
  ctl->stop(a.release_on_exit);
  return 0;
}

}  // namespace

void add_cluster_command(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<ClusterArgs>();
  auto* cmd = app.add_subcommand(
      "cluster", "Serve models as replicas on a Slurm cluster behind one OpenAI-compatible router");
  cmd->add_option("-m,--model", a->models, "A model as NAME=PATH (repeatable)")->required();
  cmd->add_option("--colocate", a->colocate,
                  "Models that share replica jobs, as A,B[,...] (repeatable): replica k of each runs in "
                  "one multi-model `tessera serve` job");
  cmd->add_option("--name", a->name, "Cluster name: Slurm jobs are NAME-MODEL-K")->capture_default_str();
  cmd->add_option("--host", a->host, "Router address to bind")->capture_default_str();
  cmd->add_option("--port", a->port, "Router port")->capture_default_str();
  cmd->add_option("--max-replicas", a->max_replicas, "Replicas per model at most")->capture_default_str();
  cmd->add_option("--min-replicas", a->min_replicas,
                  "Replicas per model kept up at all times (0: scale to zero)")->capture_default_str();
  cmd->add_option("--cpus-per-replica", a->cpus, "CPUs per replica job (and its threads)")->capture_default_str();
  cmd->add_option("--mem-per-replica", a->memory_mb,
                  "Memory per replica job, MiB (0: twice the model file + 256 MiB)")->capture_default_str();
  cmd->add_option("--replica-cap", a->replica_cap,
                  "Requests in flight on a replica before another comes up")->capture_default_str();
  cmd->add_option("--replica-port-base", a->replica_port_base,
                  "Replica slot i listens on this port + i")->capture_default_str();
  cmd->add_option("--keep-alive", a->keep_alive_s,
                  "Seconds an idle replica stays up before it is taken down (negative: never; with "
                  "--idle-policy adaptive, the fallback where a replica's history is too short)")
      ->capture_default_str();
  cmd->add_option("--idle-policy", a->idle_policy,
                  "fixed (--keep-alive), adaptive (keep-alive and pre-warming from each replica's "
                  "arrival history) or always-on")
      ->capture_default_str();
  cmd->add_option("--suspend", a->suspend,
                  "What taking an idle replica down does: release (scancel the job), keep (suspend "
                  "the model in place, job kept) or auto (keep when the measured cold start would "
                  "spend over half the TTFT SLO and the measured in-place resume is at most "
                  "--keep-ratio of it)")
      ->capture_default_str();
  cmd->add_option("--keep-ratio", a->keep_ratio, "auto: keep when in-place resume <= this x cold start")
      ->capture_default_str();
  cmd->add_option("--release-kept-after", a->release_kept_after_s,
                  "Seconds a kept job stays suspended before it is released (negative: never)")
      ->capture_default_str();
  cmd->add_option("--kept-memory", a->kept_memory_mb,
                  "MiB that kept jobs may hold in all; past it the cheapest to lose are released (0: "
                  "unlimited)")
      ->capture_default_str();
  cmd->add_option("--slo-window", a->slo_window,
                  "Answers whose TTFT drive scale-out: while any of a model's last N (within 60 s) "
                  "missed the SLO, its replicas count as full at half --replica-cap (0: off)")
      ->capture_default_str();
  cmd->add_option("--deadline", a->deadline_s, "Seconds a request waits for a replica to come up")
      ->capture_default_str();
  cmd->add_option("--ttft-slo", a->ttft_slo_s, "Time-to-first-byte SLO, seconds")->capture_default_str();
  cmd->add_option("--routing", a->routing, "prefix, least-loaded or round-robin")->capture_default_str();
  cmd->add_option("--partition", a->partition, "Slurm partition (default: Slurm's default)");
  cmd->add_option("--log-dir", a->log_dir, "Directory for the replicas' logs");
  cmd->add_option("--slurm-bin", a->slurm_bin, "Directory of sbatch/squeue/scancel (default: PATH)");
  cmd->add_option("--serve-arg", a->serve_args,
                  "An extra argument for every replica's `tessera serve` (repeatable; e.g. "
                  "--serve-arg=--ctx-size --serve-arg=512)");
  cmd->add_option("--chartjs", a->chartjs,
                  "chart.js UMD file for GET /dashboard (default: $TESSERA_CHARTJS or the npm cache)");
  cmd->add_flag("--release-on-exit", a->release_on_exit, "Cancel the replica jobs when stopping");
  cmd->add_option("--io-threads", a->io_threads, "Router HTTP I/O threads")->capture_default_str();
  cmd->callback([a, &run] { run = [a] { return run_cluster(*a); }; });
}

}  // namespace tessera::cli
