// ActivityTracker: what the policies learn from traffic. It is fed observations (a request
// arrived, a request completed, with the time) and keeps, per model, the requests in flight, when
// it last became idle, arrival counts and the histogram of its idle times. Policies read it; they
// never write it, so the live fleet and the simulator feed the same observations to the same
// tracker and get the same decisions.
// An idle time is the gap from the moment a model's in-flight count dropped to zero to the next
// arrival (the paper's "idle time" between executions); arrivals while busy record none.
// Thread-safety: not synchronized; the owner (the fleet's control thread, or the simulator)
// serializes calls.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tessera/fleet/idle_time_histogram.h"

namespace tessera::fleet {

struct ModelActivity {
  int32_t in_flight = 0;
  int64_t idle_since_ns = -1;     // when in_flight last dropped to 0; -1: never completed
  int64_t n_arrivals = 0;
  int64_t first_arrival_ns = -1;
  int64_t last_arrival_ns = -1;
  // false after ActivityTracker::forget: the next arrival records no idle time (the gap since
  // forgotten requests is not traffic's).
  bool record_next_idle = true;
  IdleTimeHistogram idle;

  explicit ModelActivity(const HistogramOptions& options) : idle(options) {}
  bool busy() const { return in_flight > 0; }
};

class ActivityTracker {
 public:
  explicit ActivityTracker(const HistogramOptions& options = {}) : options_(options) {}

  // A request for `model` arrived at `t_ns`. If the model was idle, its idle time is recorded.
  void on_arrival(const std::string& model, int64_t t_ns);
  // A request for `model` finished (any outcome) at `t_ns`. Unmatched completions are ignored.
  void on_completion(const std::string& model, int64_t t_ns);

  // The model's activity record, created if new; the reference stays valid for the tracker's
  // lifetime, so a caller that observes one model often (the controller) keeps it and calls the
  // two below instead of looking the name up each time.
  ModelActivity& track(const std::string& model) { return get(model); }
  static void arrive(ModelActivity& a, int64_t t_ns);
  static void complete(ModelActivity& a, int64_t t_ns);
  // Forgets what `a` learned (its idle times and arrivals; requests in flight stay counted): a
  // benchmark's warm-up requests are not the workload's. An idle model's idle period restarts at
  // `t_ns`; its next arrival records no idle time (nor, for a model busy now, the first arrival
  // after the forgotten requests complete).
  static void forget(ModelActivity& a, int64_t t_ns);

  // The model's activity, or nullptr if it has never been observed.
  const ModelActivity* find(const std::string& model) const;
  const HistogramOptions& histogram_options() const { return options_; }

 private:
  ModelActivity& get(const std::string& model);
  HistogramOptions options_;
  std::map<std::string, ModelActivity> models_;
};

}  // namespace tessera::fleet
