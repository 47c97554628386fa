// DevicePolicy: which of the engines waiting for the shared compute device runs its next batch.
// A pure decision over the waiting candidates and the time (no threads, no I/O), so the live
// DeviceScheduler and the fleet simulator's arbitrated shared device (sim/device_arbiter.h,
// `tessera sim --shared-device --device-arbitration`) run the same code.
//
// The rule, in order:
//   1. starvation guard: a candidate that has waited longer than max_wait_ns goes first
//      (the longest-waiting one);
//   2. deadlines: among candidates whose batch's earliest deadline falls within urgent_slack_ns
//      of now (or has passed), the earliest deadline goes first (EDF);
//   3. fairness: otherwise the candidate with the least weighted service (virtual time: device
//      nanoseconds used / weight, start-time fair queuing) goes first; ties go to the one that
//      has waited longest.
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::engine {

struct DeviceCandidate {
  int64_t vtime_ns = 0;      // weighted service received so far (see DeviceScheduler)
  int64_t deadline_ns = -1;  // earliest deadline of the batch it wants to run; -1: none
  int64_t enqueued_ns = 0;   // when it started waiting
};

struct DevicePolicyOptions {
  int64_t urgent_slack_ns = 50'000'000;   // a deadline this close makes a candidate urgent
  int64_t max_wait_ns = 2'000'000'000;    // no candidate waits longer than this behind others
};

// Index of the candidate to run next. Precondition: `candidates` is not empty.
std::size_t pick_next_device_user(const std::vector<DeviceCandidate>& candidates, int64_t now_ns,
                             const DevicePolicyOptions& options);

}  // namespace tessera::engine
