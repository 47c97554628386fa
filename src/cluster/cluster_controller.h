// ClusterController: model replicas as Slurm jobs behind one OpenAI-compatible endpoint - the
// `tessera cluster` daemon. It is a thread-safe shell over the same parts as the single-node
// fleet and the simulator:
//   FleetController (fleet/)      one entry per replica slot ("<model>#<k>", up to max_replicas
//                                 per model): lifecycle, the queue of requests waiting for a
//                                 replica, the idle policy (fixed keep-alive, or adaptive: each
//                                 slot's keep-alive and pre-warming from its arrival history,
//                                 scale to zero included), SLO and usage accounting
//   route_replica (fleet/)        the simulator's scaling rule (replica_routing.h, through
//     ReplicaRouter               replica_router.h): a request goes to an Active
//                                 replica below its cap in flight (the one most likely to hold
//                                 its prefix, then the least loaded), else to one starting, else
//                                 another replica comes up. The cap is `replica_cap`, halved
//                                 (at least 1) while the model misses its TTFT SLO: when any of
//                                 its last `slo_window` answers in the last 60 s came late (not
//                                 counting those that waited for a cold start), a replica counts
//                                 as full sooner and the model scales out.
//   PrefixAffinity                which replica was sent which prompt prefixes
//   plan_jobs (job_planner.h)     the slots and jobs (ports, co-located groups) from the options
//   SlurmReplicaHost              carries the moves out as Slurm jobs; an idle replica is
//                                 released, or suspended in place with its job kept, whichever
//                                 its measured costs favour (replica_host.h). A kept job is
//                                 released after `release_kept_after_s` suspended, or sooner
//                                 when kept jobs hold more than `kept_memory_mb` (cheapest
//                                 expected cold start per byte first).
// The router half: POST /v1/completions, /v1/chat/completions and /v1/embeddings are proxied to
// the chosen replica, the response (SSE included) streamed through as it arrives. A request for
// a model scaling from zero waits in the controller's queue until a replica is ready, up to
// request_deadline_s (then 503 naming the cause). A replica that cannot be reached before it took
// the request is marked lost and the request goes to another (up to 3 tries); once a replica has
// answered, its answer is the answer (never sent twice). GET /v1/models, /health, /metrics
// (Prometheus text: replicas per model and state, scale events, replica-seconds and idle
// replica-seconds, requests, TTFT SLO attainment, retries), /cluster/status (JSON) and
// /cluster/targets (the Active replicas for Prometheus' http_sd_configs) and /dashboard (the
// fleet dashboard page, dashboard_page.h).
// A control thread ticks the controller when it asks (Timer) and polls Slurm every
// `slurm_poll_s`: an Active replica whose job left (scancel, node failure) is suspended as lost.
// start() first adopts the jobs Slurm still runs under this cluster's name (a restarted
// controller rebuilds its view from Slurm and the replicas' /health).
// Time is the injected Clock's, in int64 ns (the options' seconds are converted at create());
// the metrics are serve's MetricsRegistry's (cluster_metrics.h).
// Thread-safety: every public method is thread-safe; handle() never blocks (proxying runs on a
// thread per forwarded request, at most max_forwarding at once, beyond which requests get 503).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/cluster/job_planner.h"
#include "tessera/cluster/replica_host.h"
#include "tessera/cluster/replica_router.h"
#include "tessera/cluster/slurm_client.h"
#include "tessera/serve/http_message.h"

namespace tessera::cluster {

struct ClusterOptions {
  std::string name = "tessera";  // Slurm job names are "<name>-<model>-<k>"
  std::vector<ClusterModelSpec> models;
  // Groups of models that share replica jobs (multi-model replicas): replica k of each member
  // runs in one job "<name>-<a>+<b>-<k>" (a fleet-mode `tessera serve` of all of them, one port,
  // the members' most CPUs and summed memory). Members need equal max_replicas.
  std::vector<std::vector<std::string>> colocate;
  int replica_port_base = 18100; // job i (over all models' slots, in order) listens on base + i
  int32_t replica_cap = 4;       // in-flight requests per replica before another comes up
  double keep_alive_s = 30.0;    // an idle replica is taken down after this (negative: never)
  std::string idle_policy = "fixed";  // fixed | adaptive | always-on (fleet/idle_policy.h)
  double release_kept_after_s = 120.0;  // a kept (suspended in place) job is released after this
  int64_t kept_memory_mb = 0;    // memory kept jobs may hold, all models; 0: unlimited
  int32_t slo_window = 16;       // answers whose TTFT drives the SLO scale-out (0: off)
  double request_deadline_s = 180.0;  // a request waits at most this for a replica
  double ttft_slo_s = 2.0;       // time to first byte, for SLO attainment
  double slurm_poll_s = 1.0;     // how often Slurm's job list is read
  int max_forwarding = 256;      // requests proxied at once
  RoutingPolicy routing = RoutingPolicy::kPrefix;
  size_t prefix_block_chars = 64;
  std::string chart_js;          // Chart.js for GET /dashboard (dashboard_page.h); empty: tables only
  ReplicaHostOptions host;
};

class ClusterController {
 public:
  // Errors: kInvalidArgument for a plan plan_jobs() refuses (job_planner.h), no Slurm client or
  // clock, an unknown idle policy, slo_window outside 0..1024. `clock` (not owned, outlives the
  // controller) times everything: the control loop, deadlines, usage, the replicas' moves.
  static Result<std::unique_ptr<ClusterController>> create(ClusterOptions options,
                                                           std::unique_ptr<SlurmClient> slurm,
                                                           const Clock* clock);
  ~ClusterController();  // stop(false)
  ClusterController(const ClusterController&) = delete;
  ClusterController& operator=(const ClusterController&) = delete;

  // Adopts this cluster's running jobs and starts the control thread. Errors: Slurm unreachable.
  Status start();
  // Stops the control thread and running moves; requests still waiting get 503. With
  // `release_replicas`, also cancels every replica job (else they keep running for the next
  // controller to adopt). Idempotent.
  void stop(bool release_replicas);

  // The router: serves one HTTP request (see above). Never blocks.
  void handle(serve::HttpRequest&& request, std::shared_ptr<serve::ResponseWriter> writer);

  nlohmann::json status_json() const;
  std::string metrics_text() const;
  // The Active replicas as Prometheus HTTP service discovery targets (GET /cluster/targets):
  // [{"targets": ["host:port"], "labels": {"model": ..., "replica": ..., "slurm_job": ...}}].
  nlohmann::json prometheus_targets() const;

 private:
  struct Impl;
  explicit ClusterController(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::cluster
