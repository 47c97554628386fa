// Deployment search (the idea of Vidur-Search, Agrawal et al., MLSys 2024): for a model shape on
// an accelerator kind, find the serving configuration - tensor-parallel degree and batch limit
// (max running requests) - and the replica count that meet the SLO at a model's peak rate with
// the fewest accelerators. A configuration's capacity is measured, not guessed: ReplicaSim runs
// bursty traffic (gamma gaps, ProbeOptions::cv) with the workload's request lengths at
// increasing rates, and the capacity is the highest rate whose p99 TTFT and mean TPOT stay within
// the SLO (bisection).
// Thread-safety: pure functions; CapacityCache is not synchronized (one owner thread).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/sim/accelerator.h"
#include "tessera/sim/cost_model.h"
#include "tessera/sim/replica_sim.h"
#include "tessera/sim/workload_lengths.h"

namespace tessera::sim {

struct SloTargets {
  int64_t ttft_ns = 2'000'000'000;  // p99 time to first token
  int64_t tpot_ns = 100'000'000;    // mean time per output token after the first
};

struct ServingConfig {
  int32_t tp = 1;
  int32_t max_running = 256;
  int32_t max_batch_tokens = 2048;  // rows per iteration (ReplicaLimits)
  double capacity_rps = 0.0;  // one replica, within the SLO
  // Requests in flight on one replica at that rate (Little's law over the probe): a router sends
  // a replica no more than this before it brings up another.
  double target_in_flight = 1.0;
  std::shared_ptr<const CostModel> cost;
  ReplicaLimits limits() const;
};

struct ProbeOptions {
  int32_t requests = 1500;  // per rate probed
  // Coefficient of variation of the probe's inter-arrival gaps (gamma; 1 is Poisson). ServeGen's
  // windows have a median CV of 1.2 and a rate-weighted median of 3.1: capacity measured under
  // Poisson overstates what a replica holds within the SLO under real bursts.
  double cv = 3.0;
  int32_t bisection_steps = 12;
  uint64_t seed = 1;
};

// The highest rate (requests/s, gaps of CV probe.cv) one replica serves within `slo`; 0 when
// even a lone request misses it.
double replica_capacity_rps(const CostModel& cost, const ReplicaLimits& limits,
                            const LengthSampler& lengths, const SloTargets& slo,
                            const ProbeOptions& probe = {}, double* in_flight = nullptr);

// Every (tp, max_running) that fits the accelerator, each with its capacity, cheapest
// accelerators-per-rps first. `tps` and `batch_limits` are the candidates.
Result<std::vector<ServingConfig>> search_configs(const ModelShape& shape,
                                                  const AcceleratorSpec& accelerator,
                                                  const LengthSampler& lengths,
                                                  const SloTargets& slo,
                                                  const std::vector<int32_t>& tps = {1, 2, 4, 8},
                                                  const std::vector<int32_t>& batch_limits = {8, 16, 32, 64, 128, 256},
                                                  const ProbeOptions& probe = {});

// The naive configuration: the smallest tp whose weights fit, the engine's default batch limit.
Result<ServingConfig> naive_config(const ModelShape& shape, const AcceleratorSpec& accelerator,
                                   const LengthSampler& lengths, const SloTargets& slo,
                                   const ProbeOptions& probe = {});

struct Deployment {
  ServingConfig config;
  int32_t replicas = 1;
  int32_t accelerators() const { return replicas * config.tp; }
};

// Replicas of `config` needed for `peak_rps` (at least 1).
int32_t replicas_for(const ServingConfig& config, double peak_rps);
// The configuration of `candidates` (from search_configs) that serves `peak_rps` with the fewest
// accelerators (ties: fewer replicas, then the earlier candidate).
Deployment cheapest_deployment(const std::vector<ServingConfig>& candidates, double peak_rps);

}  // namespace tessera::sim
