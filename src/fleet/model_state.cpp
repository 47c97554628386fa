#include "tessera/fleet/model_state.h"

namespace tessera::fleet {

std::string_view model_state_name(ModelState s) {
  switch (s) {
    case ModelState::kUnloaded: return "unloaded";
    case ModelState::kLoading: return "loading";
    case ModelState::kActive: return "active";
    case ModelState::kSuspending: return "suspending";
    case ModelState::kSuspended: return "suspended";
    case ModelState::kResuming: return "resuming";
    case ModelState::kEvicted: return "evicted";
    case ModelState::kFailed: return "failed";
  }
  return "unknown";
}

bool is_legal_transition(ModelState from, ModelState to) {
  using S = ModelState;
  switch (from) {
    case S::kUnloaded: return to == S::kLoading;
    case S::kLoading: return to == S::kActive || to == S::kFailed;
    case S::kActive: return to == S::kSuspending;
    case S::kSuspending: return to == S::kSuspended || to == S::kFailed;
    case S::kSuspended: return to == S::kResuming || to == S::kEvicted;
    case S::kResuming: return to == S::kActive || to == S::kFailed;
    case S::kEvicted: return to == S::kLoading;
    case S::kFailed: return to == S::kLoading;
  }
  return false;
}

bool holds_active_memory(ModelState s) {
  return s == ModelState::kLoading || s == ModelState::kActive || s == ModelState::kSuspending ||
         s == ModelState::kResuming;
}

}  // namespace tessera::fleet
