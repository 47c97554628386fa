// Fleet replay: many models in one FleetManager (one shared device, one idle policy), each fed
// its own arrival times (e.g. a ServeGen client each, servegen.h), open loop in real time.
// It measures what the fleet issue asks of a policy: active memory-seconds (and the idle part),
// cold starts (requests that found their model not Active), TTFT percentiles from the scheduled
// arrival and TTFT SLO attainment. Policies are given as in `tessera serve`: always-on, fixed
// keep-alive, or adaptive (the hybrid histogram policy), with every policy time divided by the
// replay's time_scale so a compressed trace sees the same policy.
// Thread-safety: runs its own fleet and threads; call from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/fleet/fleet_manager.h"

namespace tessera::bench {

struct FleetReplayModel {
  fleet::FleetModelSpec spec;
  std::vector<double> arrivals_s;  // replay seconds from the start, ascending
  std::string source;              // where the arrivals came from (for the report)
};

struct FleetReplayOptions {
  std::vector<FleetReplayModel> models;
  std::string policy = "adaptive";  // always-on | fixed | adaptive
  double keep_alive_s = 600.0;      // trace seconds (fixed; adaptive's fallback)
  double time_scale = 1.0;          // policy times are divided by this
  int threads = 0;                  // the shared device's threads (0: all cores)
  bool shared_device = true;        // false: each model's engine owns a pool of `threads` (for
                                    // comparison: N models then run N pools on the same cores)
  int64_t active_budget_bytes = 0;  // 0: unlimited
  // Prefix-cache blocks a suspended model keeps (fleet::FleetOptions::keep_prefix_bytes; 0: none).
  int64_t keep_prefix_bytes = int64_t{64} << 20;
  int prompt_tokens = 16;
  int max_tokens = 4;
  double ttft_slo_s = 1.0;
  double tail_s = 2.0;              // replay time after the last arrival still measured
  // One request per model, served before the replay's clock starts and not counted: a freshly
  // created engine's first iterations touch its buffers for the first time.
  bool warmup = false;
  uint64_t seed = 0;
  // Keep the shared device's timeline of every iteration (FleetReplayResult::iterations_log).
  bool record_iterations = false;
};

struct FleetReplayModelResult {
  std::string name;
  std::string source;
  int64_t active_bytes = 0;
  int64_t requests = 0;
  int64_t errors = 0;
  int64_t cold_starts = 0;
  int64_t resumes = 0;
  int64_t slo_met = 0;
  double memory_gb_s = 0.0;       // active GB x seconds over the replay
  double idle_memory_gb_s = 0.0;  // the part with no request in flight
  std::vector<double> ttft_s;     // successful requests, from the scheduled arrival
  // The shared device's account of this model's engine (shared_device only): iterations run,
  // device time held and time spent waiting for it.
  int64_t device_grants = 0;
  double device_busy_s = 0.0, device_wait_s = 0.0;
  // Iterations by what they ran, and the time their engine held the device for them
  // (engine::DeviceClientStats).
  int64_t prefill_grants = 0, prefill_rows = 0, decode_grants = 0, decode_rows = 0;
  double prefill_held_s = 0.0, decode_held_s = 0.0;
  // Completed moves in this replay and their mean durations, as the controller timed them.
  int64_t suspends = 0;
  double mean_resume_s = 0.0, mean_suspend_s = 0.0;
};

// One request of the replay, for side-by-side comparisons (`bench fleet --requests-out`).
struct FleetReplayRequest {
  size_t model = 0;      // index into the options' models
  double t_s = 0.0;      // scheduled arrival, replay seconds
  double ttft_s = -1.0;  // from the scheduled arrival; -1 when it failed
  bool cold = false;     // arrived while its model was not Active (counted a cold start)
};

// One iteration on the shared device (`bench fleet --iterations-out`): replay seconds
// (engine::DeviceIteration).
struct FleetReplayIteration {
  size_t model = 0;
  double asked_s = 0.0, granted_s = 0.0, acquired_s = 0.0, released_s = 0.0;
  int64_t prefill_rows = 0, decode_rows = 0;
};

struct FleetReplayResult {
  std::string policy;
  std::vector<FleetReplayRequest> requests_log;  // every request, in arrival order
  // record_iterations: the iterations asked for after the replay's clock started (the warm-up's
  // left out), in release order.
  std::vector<FleetReplayIteration> iterations_log;
  double duration_s = 0.0;  // replay wall time measured
  std::vector<FleetReplayModelResult> models;
  // Over all models.
  int64_t requests = 0, errors = 0, cold_starts = 0, slo_met = 0;
  double memory_gb_s = 0.0, idle_memory_gb_s = 0.0;
  double ttft_p50_s = 0.0, ttft_p99_s = 0.0, max_dispatch_lag_s = 0.0;
  double slo_attainment() const {
    return requests > 0 ? static_cast<double>(slo_met) / static_cast<double>(requests) : 0.0;
  }
};

// Errors: kInvalidArgument (no models, unknown policy); a model's load error.
Result<FleetReplayResult> run_fleet_replay(const FleetReplayOptions& options);

}  // namespace tessera::bench
