// ColdStartCostEviction: which models to push down a tier when memory is short, ranked by the
// expected cost of the cold start that pushing them down may cause, per byte freed:
//     cost(m) = P(a request for m within the next `window`) x (time to bring m back)
// rather than by recency (LRU), so a large model that is rarely used goes before a small one
// that is used every few seconds, even if the small one was touched longer ago.
// P comes from the model's idle-time histogram, conditioned on how long it has already been
// idle (of the past idle periods that lasted at least this long, the fraction that ended within
// `window` more); with too little history, from its mean arrival rate as a Poisson process; with
// none, a prior.
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/fleet/activity_tracker.h"
#include "tessera/fleet/fleet_view.h"

namespace tessera::fleet {

struct EvictionOptions {
  int64_t window_ns = 60'000'000'000;  // horizon over which a cold start is counted
  int64_t min_conditional_samples = 5; // history needed to use the histogram's hazard
  double prior_probability = 0.5;      // a model never seen
};

// The tier that is short of memory.
enum class PressureTier : uint8_t {
  kActive,  // free active memory: suspend idle Active models (cost uses resume_cost_s)
  kHost,    // free host memory: evict Suspended models (cost uses reload_cost_s)
};

struct EvictionPlan {
  std::vector<Decision> decisions;  // cheapest first
  int64_t bytes_freed = 0;          // may fall short of the request when too few are eligible
};

class ColdStartCostEviction {
 public:
  explicit ColdStartCostEviction(const EvictionOptions& options = {});

  // Chooses models to free at least `bytes_needed` in `tier`, cheapest expected cost per byte
  // first (ties: view order). Eligible: unpinned, idle, and Active (kActive -> kSuspend) or
  // Suspended (kHost -> kEvict). Freeing counts each model's active_bytes (kActive) or
  // host_bytes (kHost).
  EvictionPlan choose(const FleetView& view, const ActivityTracker& activity, PressureTier tier,
                      int64_t bytes_needed) const;

  // P(request for m within window | idle so far), in [0, 1].
  double request_probability(const ModelView& m, const ActivityTracker& activity,
                             int64_t now_ns) const;

 private:
  EvictionOptions options_;
};

}  // namespace tessera::fleet
