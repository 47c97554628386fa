// ServeGen client traces (Alibaba Bailian, "ServeGen", 2025): per client, 10-minute windows of
// `window_start_s,rate_rps,cv,distribution,shape,scale`: the window's mean request rate and the
// distribution (Gamma or Weibull, with its shape and scale) of its inter-arrival times; an empty
// distribution or a zero rate means no traffic in that window.
// servegen_arrivals() turns one client into arrival times for a many-model replay: the span of
// windows chosen is compressed by time_scale, and the rates are rescaled so the client's busiest
// window in the span runs at peak_rps (replay time). Each client keeps its own on/off pattern,
// relative rates and burstiness (each window holds rate x length requests, placed by gaps drawn
// from the window's distribution and scaled to fit the window) while the load fits the machine.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/rng.h"
#include "tessera/base/status.h"

namespace tessera::bench {

struct ServeGenWindow {
  double start_s = 0.0;
  double rate_rps = 0.0;
  std::string distribution;  // "Gamma", "Weibull" or empty
  double shape = 0.0;
  double scale = 0.0;
};

// Errors: kNotFound; kCorruptData naming the line (wrong column count, not a number, negative
// rate, a distribution without a positive shape and scale).
Result<std::vector<ServeGenWindow>> load_servegen_client(const std::string& path);

struct ServeGenReplayOptions {
  int64_t first_window = 0;
  int64_t n_windows = 144;      // one day of 10-minute windows
  double window_s = 600.0;      // the trace's window length
  double time_scale = 600.0;    // replay seconds = trace seconds / time_scale
  double peak_rps = 1.0;        // replay rate of the client's busiest window in the span
  uint64_t seed = 0;
};

// Arrival times in replay seconds from the span's start, ascending. Empty when the client has no
// traffic in the span.
std::vector<double> servegen_arrivals(const std::vector<ServeGenWindow>& windows,
                                      const ServeGenReplayOptions& options);

// One window's arrivals, the step servegen_arrivals() repeats per window and the simulator's
// many-model workload calls directly: the count is rate_rps x length_s rounded at random (so
// sparse windows keep their mean), and the times are placed by count + 1 gaps drawn from the
// window's distribution (exponential when it names none) and scaled together to fit
// [start_s, start_s + length_s). Appends the times, ascending, to `out` and returns how many.
// Draws nothing from `rng` when rate_rps <= 0. Preconditions: length_s > 0.
int64_t append_window_arrivals(const ServeGenWindow& window, double rate_rps, double start_s,
                               double length_s, Rng& rng, std::vector<double>& out);

// Requests in the span's windows (trace rates x window length), for picking clients.
double servegen_span_requests(const std::vector<ServeGenWindow>& windows,
                              const ServeGenReplayOptions& options);

}  // namespace tessera::bench
