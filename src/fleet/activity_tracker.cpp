#include "tessera/fleet/activity_tracker.h"

namespace tessera::fleet {

ModelActivity& ActivityTracker::get(const std::string& model) {
  auto it = models_.find(model);
  if (it == models_.end()) it = models_.emplace(model, ModelActivity(options_)).first;
  return it->second;
}

void ActivityTracker::on_arrival(const std::string& model, int64_t t_ns) { arrive(get(model), t_ns); }

void ActivityTracker::arrive(ModelActivity& a, int64_t t_ns) {
  if (a.in_flight == 0 && a.idle_since_ns >= 0 && a.record_next_idle) {
    a.idle.add(t_ns - a.idle_since_ns);
  }
  a.record_next_idle = true;
  ++a.in_flight;
  ++a.n_arrivals;
  if (a.first_arrival_ns < 0) a.first_arrival_ns = t_ns;
  a.last_arrival_ns = t_ns;
}

void ActivityTracker::forget(ModelActivity& a, int64_t t_ns) {
  const int32_t in_flight = a.in_flight;
  a = ModelActivity(a.idle.options());
  a.in_flight = in_flight;
  if (in_flight == 0) a.idle_since_ns = t_ns;
  a.record_next_idle = false;  // nor after a forgotten request still in flight completes
}

void ActivityTracker::on_completion(const std::string& model, int64_t t_ns) {
  auto it = models_.find(model);
  if (it != models_.end()) complete(it->second, t_ns);
}

void ActivityTracker::complete(ModelActivity& a, int64_t t_ns) {
  if (a.in_flight == 0) return;  // unmatched
  if (--a.in_flight == 0) a.idle_since_ns = t_ns;
}

const ModelActivity* ActivityTracker::find(const std::string& model) const {
  auto it = models_.find(model);
  return it == models_.end() ? nullptr : &it->second;
}

}  // namespace tessera::fleet
