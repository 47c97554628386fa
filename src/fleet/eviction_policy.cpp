#include "tessera/fleet/eviction_policy.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tessera/base/check.h"

namespace tessera::fleet {

ColdStartCostEviction::ColdStartCostEviction(const EvictionOptions& options) : options_(options) {
  TS_CHECK(options_.window_ns > 0);
  TS_CHECK(options_.prior_probability >= 0.0 && options_.prior_probability <= 1.0);
}

double ColdStartCostEviction::request_probability(const ModelView& m,
                                                  const ActivityTracker& activity,
                                                  int64_t now_ns) const {
  const ModelActivity* a = activity_of(m, activity);
  if (a == nullptr) return options_.prior_probability;
  if (a->busy()) return 1.0;
  const int64_t idle = std::max<int64_t>(0, idle_for_ns(m, activity, now_ns));
  const int64_t survived = a->idle.count_at_least(idle);
  if (survived >= options_.min_conditional_samples) {
    const int64_t still = a->idle.count_at_least(idle + options_.window_ns);
    return static_cast<double>(survived - still) / static_cast<double>(survived);
  }
  if (a->n_arrivals >= 2 && a->last_arrival_ns > a->first_arrival_ns) {
    const double rate = static_cast<double>(a->n_arrivals - 1) /
                        static_cast<double>(a->last_arrival_ns - a->first_arrival_ns);
    return 1.0 - std::exp(-rate * static_cast<double>(options_.window_ns));
  }
  return options_.prior_probability;
}

EvictionPlan ColdStartCostEviction::choose(const FleetView& view, const ActivityTracker& activity,
                                           PressureTier tier, int64_t bytes_needed) const {
  struct Candidate {
    size_t index;
    double cost_per_byte;
    double p;
    double cost;
  };
  const ModelState eligible_state =
      tier == PressureTier::kActive ? ModelState::kActive : ModelState::kSuspended;
  // What pushing a model down frees in the tier under pressure.
  const auto freed = [tier](const ModelView& m) {
    return tier == PressureTier::kActive ? m.active_bytes : m.host_bytes;
  };
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < view.models.size(); ++i) {
    const ModelView& m = view.models[i];
    if (m.pinned || m.state != eligible_state || freed(m) <= 0) continue;
    if (idle_for_ns(m, activity, view.now_ns) < 0) continue;  // busy
    const double p = request_probability(m, activity, view.now_ns);
    const double cost = p * (tier == PressureTier::kActive ? m.resume_cost_s : m.reload_cost_s);
    candidates.push_back({i, cost / static_cast<double>(freed(m)), p, cost});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& x, const Candidate& y) {
                     return x.cost_per_byte < y.cost_per_byte;
                   });
  EvictionPlan plan;
  const Action action = tier == PressureTier::kActive ? Action::kSuspend : Action::kEvict;
  for (const Candidate& c : candidates) {
    if (plan.bytes_freed >= bytes_needed) break;
    const ModelView& m = view.models[c.index];
    plan.decisions.push_back(
        {action, m.name,
         fmt::format("memory pressure: P(request in {:.1f} s) {:.3f} x cost {:.3f} s = {:.4f} s",
                     options_.window_ns * 1e-9, c.p,
                     tier == PressureTier::kActive ? m.resume_cost_s : m.reload_cost_s, c.cost)});
    plan.bytes_freed += freed(m);
  }
  return plan;
}

}  // namespace tessera::fleet
