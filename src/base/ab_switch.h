// An in-process A/B switch for measuring a code change on a machine whose speed drifts.
//
// On a shared VM the memory bandwidth moves by tens of percent within minutes, so two binaries
// run one after the other compare the machine's moods as much as the code. Instead, put both
// versions in one build behind `if (ab_variant() != 0)` and run `tessera bench model --ab`: it
// flips the switch every two decode steps (and runs each prefill repetition once per variant)
// and reports, per repetition, variant 1's summed time over variant 0's. Both variants then
// share every minute of the machine. With no code reading the switch the ratios are a null run
// (docs/PERFORMANCE.md, "Measuring a change in one process").
//
// Committed code does not branch on the switch: it is a measuring tool, read through a relaxed
// atomic so a candidate can test it inside a kernel's loop.
#pragma once

#include <atomic>

namespace tessera {

namespace detail {
inline std::atomic<int> ab_variant{0};
}  // namespace detail

inline int ab_variant() { return detail::ab_variant.load(std::memory_order_relaxed); }
inline void set_ab_variant(int v) { detail::ab_variant.store(v, std::memory_order_relaxed); }

}  // namespace tessera
