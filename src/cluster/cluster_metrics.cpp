#include "tessera/cluster/cluster_metrics.h"

#include <string>

namespace tessera::cluster {
namespace cluster_metrics {

double seconds_of(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace cluster_metrics

void export_cluster_metrics(const ClusterMetricsView& v, serve::MetricsRegistry& registry) {
  using cluster_metrics::seconds_of;
  for (size_t mi = 0; mi < v.models.size(); ++mi) {
    int counts[fleet::kNumModelStates] = {};
    for (size_t s = 0; s < v.slots.size(); ++s) {
      if (v.slot_model[s] == static_cast<int32_t>(mi)) ++counts[static_cast<int>(v.states[s])];
    }
    for (int k = 0; k < fleet::kNumModelStates; ++k) {
      const std::string state(fleet::model_state_name(static_cast<fleet::ModelState>(k)));
      registry.gauge("tessera_cluster_replicas", "Replica slots per model and state",
                     {{"model", v.models[mi].name}, {"state", state}})
          .set(counts[k]);
    }
  }
  struct PerModel {
    const char* name;
    const char* help;
    double (*get)(const ClusterModelStats&);
  };
  static const PerModel kCounters[] = {
      {"tessera_cluster_requests_total", "Requests received per model",
       [](const ClusterModelStats& s) { return static_cast<double>(s.requests); }},
      {"tessera_cluster_answered_total", "Requests a replica answered",
       [](const ClusterModelStats& s) { return static_cast<double>(s.answered); }},
      {"tessera_cluster_failed_total", "Requests no replica answered (deadline, failures)",
       [](const ClusterModelStats& s) { return static_cast<double>(s.failed); }},
      {"tessera_cluster_refused_total", "Requests refused at once (limits, failed model)",
       [](const ClusterModelStats& s) { return static_cast<double>(s.refused); }},
      {"tessera_cluster_retries_total", "Requests re-routed after a replica could not take them",
       [](const ClusterModelStats& s) { return static_cast<double>(s.retries); }},
      {"tessera_cluster_slo_met_total", "Answered requests whose first byte came within the TTFT SLO",
       [](const ClusterModelStats& s) { return static_cast<double>(s.slo_met); }},
      {"tessera_cluster_scale_ups_total", "Replicas started (scale up)",
       [](const ClusterModelStats& s) { return static_cast<double>(s.scale_ups); }},
      {"tessera_cluster_scale_downs_total", "Replicas released (scale down)",
       [](const ClusterModelStats& s) { return static_cast<double>(s.scale_downs); }},
      {"tessera_cluster_replicas_lost_total", "Active replicas whose job went away",
       [](const ClusterModelStats& s) { return static_cast<double>(s.lost); }},
      {"tessera_cluster_affinity_routed_total", "Requests routed to a replica holding part of their prefix",
       [](const ClusterModelStats& s) { return static_cast<double>(s.affinity_routed); }},
      {"tessera_cluster_replica_seconds_total", "Seconds replicas held their job (starting, active, draining)",
       [](const ClusterModelStats& s) { return seconds_of(s.replica_ns); }},
      {"tessera_cluster_idle_replica_seconds_total", "Seconds active replicas had no request",
       [](const ClusterModelStats& s) { return seconds_of(s.idle_replica_ns); }},
      {"tessera_cluster_kept_replica_seconds_total",
       "Seconds replica jobs were kept with their model suspended in place",
       [](const ClusterModelStats& s) { return seconds_of(s.kept_ns); }},
      {"tessera_cluster_slo_scaled_routes_total",
       "Requests routed with the replica cap halved because the model missed its TTFT SLO",
       [](const ClusterModelStats& s) { return static_cast<double>(s.slo_scaled_routes); }},
  };
  for (const PerModel& c : kCounters) {
    for (size_t mi = 0; mi < v.models.size(); ++mi) {
      registry.counter(c.name, c.help, {{"model", v.models[mi].name}}).sync(c.get(v.stats[mi]));
    }
  }
  for (size_t mi = 0; mi < v.models.size(); ++mi) {
    int64_t n = 0;
    for (size_t s = 0; s < v.slots.size(); ++s) {
      if (v.slot_model[s] == static_cast<int32_t>(mi)) n += v.measures[s].kept_released;
    }
    registry
        .counter("tessera_cluster_kept_released_total",
                 "Kept jobs released (after release_kept_after_s, or past the kept-memory budget)",
                 {{"model", v.models[mi].name}})
        .sync(static_cast<double>(n));
  }
  struct PerSlot {
    const char* name;
    const char* help;
    double (*get)(const ReplicaMeasures&);
  };
  static const PerSlot kPerSlot[] = {
      {"tessera_cluster_replica_job_kept", "1 while the slot's job is kept with its model suspended in place",
       [](const ReplicaMeasures& m) { return m.kept ? 1.0 : 0.0; }},
      {"tessera_cluster_replica_cold_start_seconds", "The slot's mean measured cold start (sbatch to ready)",
       [](const ReplicaMeasures& m) { return m.cold_start_s; }},
      {"tessera_cluster_replica_resume_in_place_seconds", "The slot's mean measured in-place resume",
       [](const ReplicaMeasures& m) { return m.resume_s; }},
  };
  for (const PerSlot& g : kPerSlot) {
    for (size_t i = 0; i < v.slots.size(); ++i) {
      const serve::MetricLabels labels = {{"model", v.slots[i].model},
                                          {"replica", std::to_string(v.slots[i].replica)}};
      registry.gauge(g.name, g.help, labels).set(g.get(v.measures[i]));
    }
  }
}

}  // namespace tessera::cluster
