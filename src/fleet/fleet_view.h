// The inputs and outputs of fleet policies: a FleetView is a snapshot of the fleet at one instant
// (each model's lifecycle state, size and cost to bring back, and the budgets); a Decision is one
// thing a policy wants done. Policies are pure functions of (FleetView, ActivityTracker): no I/O,
// no clock of their own, deterministic, so the simulator can run them unchanged.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/fleet/model_state.h"

namespace tessera::fleet {

struct ModelActivity;

struct ModelView {
  std::string name;
  ModelState state = ModelState::kUnloaded;
  int64_t state_since_ns = 0;  // when it entered `state`
  int64_t active_bytes = 0;    // what it occupies in the active tier when loaded (weights + KV)
  int64_t host_bytes = 0;      // what it occupies in the host tier when suspended (its weights)
  double resume_cost_s = 0.0;  // expected time to bring it back to Active from the host tier
  double reload_cost_s = 0.0;  // expected time to bring it back to Active from disk (cold)
  bool pinned = false;         // operator pinned it: never suspended or evicted by a policy
  // The model's record in the ActivityTracker passed with this view, when the view's maker
  // knows it (saves a lookup by name per model per decision); null: look it up.
  const ModelActivity* activity = nullptr;
};

struct FleetView {
  int64_t now_ns = 0;
  int64_t active_budget_bytes = 0;  // 0: unlimited
  int64_t host_budget_bytes = 0;    // 0: unlimited
  std::vector<ModelView> models;    // in a stable order (decisions follow it on ties)
};

enum class Action : uint8_t {
  kSuspend,  // Active -> Suspending -> Suspended: release active memory, keep a host image
  kPrewarm,  // Suspended -> Resuming -> Active (or Evicted -> Loading) before a request arrives
  kEvict,    // Suspended -> Evicted: drop the host image
};
std::string_view action_name(Action a);  // "suspend", "prewarm", "evict"

struct Decision {
  Action action = Action::kSuspend;
  std::string model;
  std::string reason;  // for logs and tests: "idle 300.0 s >= keep-alive 300.0 s"

  bool operator==(const Decision& o) const { return action == o.action && model == o.model; }
};

class ActivityTracker;
// m.activity, else the tracker's record of m (null when never observed).
const ModelActivity* activity_of(const ModelView& m, const ActivityTracker& activity);
// The time `m` has been idle at `now_ns`, or -1 when it is busy. A model with no completed
// request counts as idle since it entered its current state.
int64_t idle_for_ns(const ModelView& m, const ActivityTracker& activity, int64_t now_ns);

}  // namespace tessera::fleet
