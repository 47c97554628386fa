#include "tessera/fleet/lifecycle.h"

#include <fmt/format.h>

namespace tessera::fleet {

ModelLifecycle::ModelLifecycle(std::string model, const Clock* clock)
    : model_(std::move(model)), clock_(clock) {
  TS_CHECK(clock_ != nullptr);
  since_ns_ = clock_->now_ns();
}

ModelState ModelLifecycle::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

int64_t ModelLifecycle::state_since_ns() const {
  std::lock_guard lock(mu_);
  return since_ns_;
}

Status ModelLifecycle::transition(ModelState to, std::string_view reason) {
  std::lock_guard lock(mu_);
  if (!is_legal_transition(state_, to)) {
    return invalid_argument(fmt::format("model '{}': illegal transition {} -> {}", model_,
                                        model_state_name(state_), model_state_name(to)));
  }
  const int64_t now = clock_->now_ns();
  // A clock that steps backwards (it should not) must not make time-in-state negative.
  const int64_t stayed = now > since_ns_ ? now - since_ns_ : 0;
  TransitionEvent event{model_, state_, to, now, stayed, std::string(reason)};
  time_in_ns_[state_index(state_)] += stayed;
  ++entries_[state_index(to)];
  state_ = to;
  since_ns_ = now;
  for (const auto& listener : listeners_) listener(event);
  return Status::ok();
}

int64_t ModelLifecycle::time_in_state_ns(ModelState s) const {
  std::lock_guard lock(mu_);
  int64_t t = time_in_ns_[state_index(s)];
  if (s == state_) {
    const int64_t now = clock_->now_ns();
    if (now > since_ns_) t += now - since_ns_;
  }
  return t;
}

int64_t ModelLifecycle::entries(ModelState s) const {
  std::lock_guard lock(mu_);
  return entries_[state_index(s)];
}

void ModelLifecycle::add_listener(TransitionListener listener) {
  std::lock_guard lock(mu_);
  listeners_.push_back(std::move(listener));
}

}  // namespace tessera::fleet
