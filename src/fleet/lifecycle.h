// ModelLifecycle: the state machine of one model (states and legal edges in model_state.h). It
// is the only code that changes a model's state: transition() checks the edge, stamps the time
// from the injected Clock, accumulates time-in-state and tells the listeners.
// Thread-safety: all methods are thread-safe (one mutex). Listeners run on the thread that calls
// transition(), with the lifecycle's lock held, in transition order: they must be quick and must
// not call back into this lifecycle.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/fleet/model_state.h"

namespace tessera::fleet {

struct TransitionEvent {
  std::string model;
  ModelState from = ModelState::kUnloaded;
  ModelState to = ModelState::kUnloaded;
  int64_t at_ns = 0;           // clock time of the transition
  int64_t time_in_from_ns = 0; // how long the model spent in `from` this time
  std::string reason;          // free text for logs: "idle 300 s", "request", "operator"
};

using TransitionListener = std::function<void(const TransitionEvent&)>;

class ModelLifecycle {
 public:
  // Starts in Unloaded at clock->now_ns(). `clock` is not owned and must outlive this object.
  ModelLifecycle(std::string model, const Clock* clock);
  ModelLifecycle(const ModelLifecycle&) = delete;
  ModelLifecycle& operator=(const ModelLifecycle&) = delete;

  const std::string& model() const { return model_; }
  ModelState state() const;
  // Clock time at which the current state was entered.
  int64_t state_since_ns() const;

  // Moves to `to` if `state() -> to` is legal; the one function that changes the state.
  // Errors: kInvalidArgument naming both states if the edge is illegal (nothing changes and no
  // listener is called).
  Status transition(ModelState to, std::string_view reason = {});

  // Total time spent in `s` since construction, including the current stay if `s` is current.
  int64_t time_in_state_ns(ModelState s) const;
  // How many times `s` was entered by a transition (the initial Unloaded is not counted):
  // entries(kResuming) counts resumes, entries(kLoading) counts loads and cold reloads.
  int64_t entries(ModelState s) const;

  // Adds a listener called after every successful transition. Listeners cannot be removed; add
  // them before the lifecycle is shared between threads.
  void add_listener(TransitionListener listener);

 private:
  const std::string model_;
  const Clock* clock_;
  mutable std::mutex mu_;
  ModelState state_ = ModelState::kUnloaded;
  int64_t since_ns_ = 0;
  std::array<int64_t, kNumModelStates> time_in_ns_{};
  std::array<int64_t, kNumModelStates> entries_{};
  std::vector<TransitionListener> listeners_;
};

}  // namespace tessera::fleet
