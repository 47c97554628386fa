// ModelState: the lifecycle of one model in the fleet and the table of legal transitions. The
// table is the single source of truth; ModelLifecycle (lifecycle.h) is the one place that moves a
// model along it.
//
//                ┌─────────────── retry ────────────────┐
//                v                                      │
//   Unloaded ─> Loading ─────── error ─────────────> Failed <──── error ────┐
//                ^   │                                  ^                   │
//         reload │   │ done                             │ error             │
//                │   v                                  │                   │
//             Evicted   Active ───── idle/pressure ──> Suspending           │
//                ^        ^                             │                   │
//                │        │ done                        │ done              │
//                │        │                             v                   │
//                │     Resuming <── request/prewarm ── Suspended            │
//                │        └─────────────────────────────│───────────────────┘
//                └────────────── host pressure ─────────┘
//
// Legal edges (12), and why there are no others:
//   Unloaded  -> Loading      first load (from disk)
//   Loading   -> Active       load finished; memory counted against the active budget
//   Loading   -> Failed       load error (bad file, out of memory)
//   Active    -> Suspending   idle policy, memory pressure or operator; in-flight requests drain
//   Suspending-> Suspended    active memory released, image kept in the host tier
//   Suspending-> Failed       the image could not be written (the active copy may be gone)
//   Suspended -> Resuming     a request arrived, or the policy pre-warms
//   Resuming  -> Active       the kernel-ready image is back in active memory
//   Resuming  -> Failed       the image could not be read back
//   Suspended -> Evicted      host-tier pressure: the host image is dropped, only disk remains
//   Evicted   -> Loading      a request or pre-warm for an evicted model is a cold load
//   Failed    -> Loading      operator (or backoff) retry
// Active never goes straight to Evicted: releasing active memory always passes through
// Suspending, so draining in-flight requests exists in one place. There is no Suspending -> Active
// (abort): suspension takes milliseconds, so a request that arrives meanwhile waits and resumes.
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace tessera::fleet {

enum class ModelState : uint8_t {
  kUnloaded = 0,
  kLoading,
  kActive,
  kSuspending,
  kSuspended,
  kResuming,
  kEvicted,
  kFailed,
};

inline constexpr int kNumModelStates = 8;

inline constexpr std::array<ModelState, kNumModelStates> kAllModelStates = {
    ModelState::kUnloaded,  ModelState::kLoading,  ModelState::kActive,  ModelState::kSuspending,
    ModelState::kSuspended, ModelState::kResuming, ModelState::kEvicted, ModelState::kFailed,
};

// Stable lower_snake_case name for metrics and /v1/models: "unloaded", "suspending", ...
std::string_view model_state_name(ModelState s);

// True when `from -> to` is one of the 12 legal edges above (self-edges are never legal).
bool is_legal_transition(ModelState from, ModelState to);

// True in the states where the model's weights occupy active memory (counted against the active
// budget): Loading, Active, Suspending and Resuming.
bool holds_active_memory(ModelState s);

inline int state_index(ModelState s) { return static_cast<int>(s); }

}  // namespace tessera::fleet
