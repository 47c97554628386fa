// `tessera cluster`: model replicas as Slurm jobs behind one OpenAI-compatible endpoint
// (cluster/cluster_controller.h). Replicas are `tessera serve` processes submitted with sbatch;
// requests wait while a model scales from zero; idle replicas are released after --keep-alive.
// SIGINT/SIGTERM stop the router; replica jobs keep running for the next controller to adopt
// unless --release-on-exit.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "tessera/cluster/cluster_daemon.h"

namespace tessera::cli {
namespace {

struct ClusterArgs {
  cluster::ClusterDaemonArgs daemon;
  std::string chartjs;  // --chartjs: where Chart.js is read from
};

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tessera") : p.string();
}

int run_cluster(ClusterArgs a) {
  a.daemon.chart_js = load_chart_js(a.chartjs);
  a.daemon.tessera_bin = self_path();
  Status st = cluster::run_cluster_daemon(a.daemon, real_clock(), [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  return st.is_ok() ? 0 : fail(st);
}

}  // namespace

void add_cluster_command(CLI::App& app, RunFn& run) {
  auto args = std::make_shared<ClusterArgs>();
  cluster::ClusterDaemonArgs* a = &args->daemon;
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
  cmd->add_option("--chartjs", args->chartjs,
                  "chart.js UMD file for GET /dashboard (default: $TESSERA_CHARTJS or the npm cache)");
  cmd->add_flag("--release-on-exit", a->release_on_exit, "Cancel the replica jobs when stopping");
  cmd->add_option("--io-threads", a->io_threads, "Router HTTP I/O threads")->capture_default_str();
  cmd->callback([args, &run] { run = [args] { return run_cluster(*args); }; });
}

}  // namespace tessera::cli
