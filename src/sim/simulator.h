// Simulator: a discrete-event simulation of a fleet serving many models, driving the live
// fleet's own FleetController and idle policies (fleet/) over SimHost, with each model replica
// simulated by ReplicaSim under its cost model, and traffic from a Workload.
//
// A model has up to `replicas` replica slots (its deployment, deployment_search.h); each slot is
// one model in a FleetController (lifecycle, queue, policies, budgets). How slots share hardware
// and which slot a request goes to make the policies compared:
//   dedicated   every slot Active all day on its own accelerators (the baseline)
//   keep-alive  own accelerators; a slot idle for keep_alive_s is suspended (released) and
//               resumed by the next request; requests spread over the model's Active slots
//   adaptive    as keep-alive under the hybrid-histogram policy (pre-warm + learned keep-alive)
//   scaling     demand-driven replicas: requests pack onto the fewest Active slots below their
//               batch limit, a slot comes up when all are full, and idle slots go after the
//               keep-alive (scale-to-zero included)
//   pooled      scaling, and the slots of many models share accelerator groups (nodes of
//               pool_accelerators): one controller per node with the group's memory as its
//               active budget evicts by expected cold-start cost (ColdStartCostEviction); models
//               resident together time-share the group token by token (as Aegaeon does),
//               approximated by stretching each step by the share of the group's compute that
//               the busy models need
// Accelerator-hours count the accelerators held: a slot's tp while it holds active memory
// (Loading, Active, Suspending, Resuming); a pooled node's ceil(active bytes / accelerator memory)
// of its group. Time runs from -warmup (first replicas load before traffic starts at 0, not
// counted) to the workload's end plus a drain tail; accounting covers [0, duration).
// Thread-safety: run_simulation() is a pure function of its inputs (deterministic).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/fleet/idle_time_histogram.h"
#include "tessera/sim/accelerator.h"
#include "tessera/sim/deployment_search.h"
#include "tessera/sim/workload.h"

namespace tessera::sim {

struct SimModel {
  std::string name;
  std::string shape;     // for reports
  Deployment deployment; // serving config and the replicas it may use (dedicated: all of them)
  double mean_rps = 0.0;  // the workload's, for pooled placement
};

struct SimOptions {
  std::string policy = "keep-alive";  // dedicated | keep-alive | adaptive | scaling | pooled
  double keep_alive_s = 300.0;        // keep-alive, scaling, pooled; adaptive's fallback
  fleet::HistogramOptions histogram;  // the idle-time histograms the adaptive policy learns
  SloTargets slo;
  int32_t pool_accelerators = 8;      // pooled: accelerators per node
  int32_t pool_max_models = 32;       // pooled: slots per node at most
  // pooled: the active bytes of the slots placed on a node, over the node's memory, at most
  // (how many models share it, only some of them resident at a time).
  double pool_overcommit = 4.0;
  // pooled: a node takes replicas while their expected resident bytes (each replica's active
  // bytes x the chance a request came within the last keep-alive, 1 - exp(-rate x keep-alive))
  // stay within this fraction of its memory.
  double pool_fill = 0.8;
  double host_memory_bytes = 2e12;    // per node (pooled) for suspended weights
  int64_t request_deadline_ns = 60'000'000'000;
  double tick_fallback_s = 10.0;      // when a policy cannot tell when it next decides
  double sample_period_s = 600.0;     // accelerators-in-use time series
  double warmup_s = -1.0;  // before traffic; -1: the longest load (models come up at ~0)
  // Every replica time-shares one compute device (the live fleet's shared DeviceScheduler):
  // steps stretch by the number of busy replicas.
  bool shared_device = false;
  // Routing among a model's replicas by the cluster router's rules (fleet/replica_routing.h):
  // Active replicas in turn (`tessera cluster --routing round-robin`), and the replica cap halved
  // while any of the model's last `slo_window` answers (within a minute) missed the TTFT SLO
  // (`tessera cluster --slo-window`). The defaults keep the simulator's routing as it was.
  bool round_robin = false;
  int32_t slo_window = 0;
  // With shared_device: instead of stretching, grant the device one whole iteration at a time
  // by the live DeviceScheduler's rule (device_arbiter.h: engine::pick_next_device_user), each
  // replica's batch composed as the engine scheduler composes it (iteration_replica.h) and fixed
  // when it asks. Deadlines: a request's TTFT SLO (slo.ttft_ns) before its first token, then
  // device_tpot_deadline_ns after each token (engine::EngineOptions::tpot_slo_ns).
  bool device_arbitration = false;
  int64_t device_tpot_deadline_ns = 200'000'000;
  // With device_arbitration: an iteration granted to another replica than the one that ran the
  // device's previous iteration takes this much longer (a hand-off: on the live CPU device the
  // new holder's thread wakes and its activations, KV and scratch are cold in the caches after
  // another model's weights streamed through them). Fitted to a live run's iteration log
  // (scripts/sim_validate_compare.py): 0.1-0.8 ms on a 3.2-4.5 ms step on this CPU.
  int64_t device_switch_ns = 0;
  // With device_arbitration: how an iteration's time varies about its cost model's (which gives
  // a mean). Each iteration's planned time is multiplied by a draw (seeded by step_seed, with
  // replacement) from the pool of its kind: [prompt][switch], prompt = the iteration has
  // prompt rows, switch = another replica ran the device's previous iteration (as for
  // device_switch_ns); an empty pool draws 1. Measured per iteration in a live run (`bench fleet
  // --iterations-out`: the device's time over the fitted cost), they carry the variability a
  // mean cost leaves out - and queues grow with service-time variance, not only with its mean.
  std::vector<double> step_multipliers[2][2];
  // With device_arbitration: the device's speed over time, as (from ns, factor) in time order -
  // an iteration granted at t takes its cost model's time times the factor of the last entry at
  // or before t (1 before the first). Measured in a live run (`bench fleet --iterations-out`: its
  // iterations' device time over the fitted cost, per window), it carries a machine whose speed
  // drifts (memory bandwidth on a shared VM) or is slower in one stretch than on average.
  std::vector<std::pair<int64_t, double>> device_speed;
  // Instead of independent draws, blocks of the measured sequence (a block bootstrap, which keeps
  // the slow and fast stretches a live run has - its iteration times are autocorrelated): when
  // step_block > 0 and step_series is not empty, an iteration takes the multiplier of the next
  // entry of its kind (prompt rows or not) in step_series from a cursor, which jumps to a seeded
  // random entry every step_block iterations. step_series: (multiplier, prompt), in live order.
  std::vector<std::pair<double, bool>> step_series;
  int32_t step_block = 0;
  uint64_t step_seed = 1;
  double tail_s = 600.0;              // after the last arrival, for in-flight requests
  int64_t max_trace_events = 0;       // Chrome trace of lifecycle moves (0: none)
  bool record_transitions = false;    // keep every lifecycle transition (tests, small runs)
  bool record_requests = false;       // keep every request's outcome (small runs)
  // Keep every iteration of the arbitrated shared device (device_arbitration; small runs).
  bool record_iterations = false;
};

// One iteration on an arbitrated shared device (record_iterations), for comparing with a live
// run's (`bench fleet --iterations-out`): seconds.
struct SimIterationRecord {
  int32_t model = 0;
  double asked_s = 0.0, granted_s = 0.0, released_s = 0.0;
  int32_t prefill_rows = 0, decode_rows = 0;
};

// One request's outcome (record_requests), for side-by-side comparisons with a live run.
struct SimRequestRecord {
  int32_t model = 0;     // index into the models
  double t_s = 0.0;      // arrival
  double ttft_s = -1.0;  // -1: refused or still in flight at the end
  bool cold = false;     // its replica was not Active when it arrived
};

// One lifecycle move as the Chrome trace (and tests) see it.
struct SimTransition {
  double t_s = 0.0;
  std::string slot;  // "model#replica"
  std::string from, to, reason;
};

struct SimResult {
  std::string policy;
  double duration_s = 0.0;
  int64_t models = 0, slots = 0;
  int64_t dedicated_accelerators = 0;  // sum over models of replicas x tp
  double accelerator_hours = 0.0;
  double dedicated_accelerator_hours = 0.0;  // dedicated_accelerators x duration
  double busy_accelerator_hours = 0.0;       // accelerators x time their replica computed
  double device_busy_s = 0.0;                // shared_device: time any replica computed
  double utilization() const {
    return accelerator_hours > 0 ? busy_accelerator_hours / accelerator_hours : 0.0;
  }
  double memory_gb_hours = 0.0;              // active bytes held x time
  int64_t requests = 0, served = 0, refused = 0, slo_met = 0;
  double slo_attainment() const {
    return requests > 0 ? static_cast<double>(slo_met) / static_cast<double>(requests) : 0.0;
  }
  double ttft_p50_s = 0, ttft_p99_s = 0, ttft_mean_s = 0;
  double tpot_p50_s = 0, tpot_p99_s = 0;
  int64_t cold_starts = 0, loads = 0, resumes = 0, suspends = 0, evictions = 0;
  int64_t events = 0;
  double wall_s = 0.0;
  int64_t peak_rss_bytes = 0;
  std::vector<double> accelerators_in_use;  // mean over each sample period
  std::vector<SimTransition> transitions;   // record_transitions / max_trace_events
  std::vector<SimRequestRecord> request_log;  // record_requests: in arrival order
  std::vector<SimIterationRecord> iteration_log;  // record_iterations: in release order
};

// Errors: kInvalidArgument for an unknown policy, models that do not match the workload's, a
// model with no replicas or a slot that does not fit a pool node.
Result<SimResult> run_simulation(Workload& workload, const std::vector<SimModel>& models,
                                 const AcceleratorSpec& accelerator, const SimOptions& options);

}  // namespace tessera::sim
