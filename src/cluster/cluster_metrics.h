// Cluster metrics: what the router counts per model (ClusterModelStats) and their Prometheus
// families (tessera_cluster_*) in serve's MetricsRegistry, the registry the server's /metrics
// renders: replica slots per model and state, requests by outcome, scale events, replica-seconds
// held, idle and kept, SLO-scaled routes, kept jobs released, and each slot's measured cold start
// and in-place resume (the inputs of the keep-or-release choice).
// Thread-safety: export_cluster_metrics() reads its arguments as given (the caller holds their
// lock); the registry locks itself.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/cluster/job_planner.h"
#include "tessera/cluster/replica_host.h"
#include "tessera/fleet/model_state.h"
#include "tessera/serve/metrics.h"

namespace tessera::cluster {

struct ClusterModelStats {
  int64_t requests = 0, answered = 0, failed = 0, refused = 0, retries = 0, slo_met = 0;
  int64_t scale_ups = 0, scale_downs = 0, lost = 0, affinity_routed = 0;
  int64_t slo_scaled_routes = 0;  // routed with the cap halved by SLO misses
  int64_t replica_ns = 0;         // time replicas held their job (starting, active, draining)
  int64_t idle_replica_ns = 0;    // time Active replicas had no request
  int64_t kept_ns = 0;            // time jobs were kept with their model suspended
};

// The cluster's state as metrics: per model (models[i], stats[i]) and per slot (slots[s] of model
// slot_model[s], in state states[s], having measured measures[s]).
struct ClusterMetricsView {
  std::span<const ClusterModelSpec> models;
  std::span<const ClusterModelStats> stats;
  std::span<const ReplicaSlot> slots;
  std::span<const int32_t> slot_model;
  std::span<const fleet::ModelState> states;
  std::span<const ReplicaMeasures> measures;
};

// Sets the tessera_cluster_* metrics in `registry` to `view` (counters synced to the totals).
void export_cluster_metrics(const ClusterMetricsView& view, serve::MetricsRegistry& registry);

}  // namespace tessera::cluster
