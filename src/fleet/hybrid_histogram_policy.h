// HybridHistogramPolicy: the adaptive idle policy of "Serverless in the Wild" (Shahrad et al.,
// USENIX ATC 2020, section 4.2), per model:
//   - learn the idle-time histogram (ActivityTracker);
//   - if it is representative, the pre-warm window is its head (the 5th percentile, rounded down
//     to a bin edge, less a 10% margin) and the keep-alive end its tail (the 99th percentile,
//     rounded up to a bin edge, plus 10%): after going idle the model is suspended at once
//     (when pre-warm > 0), brought back at pre-warm, and kept until keep-alive end;
//   - otherwise fall back to a fixed keep-alive with no pre-warm.
// "Representative" follows the paper: enough samples, not too many idle times past the
// histogram's range, and a coefficient of variation of the bin counts of at least a threshold
// (2): a concentrated histogram (high CV) predicts the next arrival; a flat one (low CV) does not.
// The paper falls back to ARIMA for models whose idle times are mostly out of range; here they
// use the fixed keep-alive too (a later step may add a forecaster behind the same interface).
// Windows are measured from the start of the idle period (the last completion), so a pre-warm
// does not restart them.
// Thread-safety: immutable after construction.
#pragma once

#include <optional>

#include <cstdint>
#include <string>

#include "tessera/fleet/idle_policy.h"

namespace tessera::fleet {

struct HybridHistogramOptions {
  double head_percentile = 0.05;
  double tail_percentile = 0.99;
  double margin = 0.10;                    // pre-warm shrinks, keep-alive grows by this fraction
  int64_t min_samples = 10;                // fewer idle times: not representative
  double cv_threshold = 2.0;               // bin-count CV below this: not representative
  double max_out_of_bounds_fraction = 0.5; // more out-of-range idle times: not representative
  int64_t fallback_keep_alive_ns = 600'000'000'000;  // 10 minutes
};

// The windows chosen for one model, measured from the start of its idle period.
struct HybridWindows {
  bool representative = false;
  int64_t prewarm_ns = 0;     // suspend right after going idle and come back at this time; 0: stay
  int64_t keep_alive_ns = 0;  // suspend once idle this long
  std::string reason;         // why (for logs and tests)
};

class HybridHistogramPolicy final : public IdlePolicy {
 public:
  // Preconditions (checked): 0 < head <= tail <= 1, margin in [0, 1), fallback >= 0.
  explicit HybridHistogramPolicy(const HybridHistogramOptions& options = {});

  std::string_view name() const override { return "hybrid-histogram"; }
  // Active, idle, unpinned: kSuspend when idle >= keep_alive, or when pre-warm > 0 and idle is
  // still before pre-warm. Suspended or Evicted, idle, unpinned: kPrewarm when pre-warm > 0 and
  // pre-warm <= idle < keep_alive.
  std::vector<Decision> decide(const FleetView& view,
                               const ActivityTracker& activity) const override;

  // The next window boundary (keep-alive end of an idle Active model, pre-warm start of a
  // suspended one).
  int64_t next_decision_ns(const FleetView& view, const ActivityTracker& activity) const override;
  // The windows for a model with this activity (nullptr: never seen, so the fallback).
  HybridWindows windows(const ModelActivity* activity) const;
  const HybridHistogramOptions& options() const { return options_; }

 private:
  // An unpinned model that is idle and Active (may be suspended) or away (may be pre-warmed):
  // when its idle period started and its windows; nullopt for any other model.
  struct IdleModel {
    bool active = false;
    int64_t start_ns = 0;
    HybridWindows windows;
  };
  std::optional<IdleModel> idle_model(const ModelView& m, const ActivityTracker& activity) const;

  HybridHistogramOptions options_;
};

}  // namespace tessera::fleet
