// run_cluster_daemon: `tessera cluster` as a library call - the setup the command line asks for
// and nothing else: the ClusterOptions from the flags' values (models as NAME=PATH, co-located
// groups as "a,b", suspend and routing modes by name), the Slurm CLI client, the controller and
// the router's HTTP server; it then serves until SIGINT or SIGTERM and stops (the replica jobs
// keep running for the next controller to adopt unless release_on_exit).
// Thread-safety: call once, from the main thread (it blocks SIGINT/SIGTERM in the calling thread
// before any thread starts, and waits for them).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/cluster/cluster_controller.h"

namespace tessera::cluster {

struct ClusterDaemonArgs {
  std::vector<std::string> models;    // NAME=PATH
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
  std::string slurm_bin;               // directory of sbatch/squeue/scancel; empty: PATH
  std::string chart_js;                // Chart.js source for /dashboard; empty: tables only
  std::string tessera_bin = "tessera"; // what the replica jobs run
  std::vector<std::string> serve_args;
  bool release_on_exit = false;
  int io_threads = 2;
};

// The controller's options from the flags (model paths made absolute; the log directory made
// absolute and created). Errors: kInvalidArgument for a malformed --model, a missing model file,
// no model, an unknown suspend or routing mode.
Result<ClusterOptions> cluster_options_from_args(const ClusterDaemonArgs& a);

// Runs the daemon until SIGINT/SIGTERM; `say` gets the lines an operator reads (listening,
// stopping). Errors: bad arguments, the controller or the router failed to start.
Status run_cluster_daemon(const ClusterDaemonArgs& a, const Clock* clock,
                          const std::function<void(const std::string&)>& say);

}  // namespace tessera::cluster
