#include "tessera/fleet/fleet_view.h"

#include <algorithm>

#include "tessera/fleet/activity_tracker.h"

namespace tessera::fleet {

std::string_view action_name(Action a) {
  switch (a) {
    case Action::kSuspend: return "suspend";
    case Action::kPrewarm: return "prewarm";
    case Action::kEvict: return "evict";
  }
  return "unknown";
}

const ModelActivity* activity_of(const ModelView& m, const ActivityTracker& activity) {
  return m.activity != nullptr ? m.activity : activity.find(m.name);
}

int64_t idle_for_ns(const ModelView& m, const ActivityTracker& activity, int64_t now_ns) {
  const ModelActivity* a = activity_of(m, activity);
  if (a != nullptr && a->busy()) return -1;
  // Idle since the later of its last completion and entering its current state: a model that
  // was just resumed (or loaded and never used) starts a fresh idle period.
  int64_t since = m.state_since_ns;
  if (a != nullptr && a->idle_since_ns >= 0) since = std::max(since, a->idle_since_ns);
  return std::max<int64_t>(0, now_ns - since);
}

}  // namespace tessera::fleet
