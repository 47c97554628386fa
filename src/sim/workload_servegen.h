// The ServeGen workload: many models whose traffic follows real ServeGen clients (Alibaba
// Bailian, 14 days of 10-minute windows per client, each with a rate and a Gamma or Weibull
// inter-arrival distribution; see bench/servegen.h). Model i replays client i % n_clients, so a
// few hundred clients scale to 100,000s of models, each keeping its client's on/off pattern,
// diurnal shape and burstiness:
//   - copy k = i / n_clients of a client starts at day (d_c + k) mod n_days of the client's 14,
//     where d_c is drawn from the seed per client, so copies 0..13 replay different days; past
//     that, days repeat and the copies differ only in their seed. Offsets are whole days, so
//     every model sees the same time of day at the same simulated time.
//   - each model draws from its own generator seeded by (seed, i): its stream does not depend on
//     how many other models there are.
//   - every rate is multiplied by rate_scale; with max_peak_rps > 0, a model whose busiest window
//     in its span would exceed it has all its rates scaled down by the same factor so that window
//     runs at max_peak_rps (its shape is kept, its volume drops).
// Each window holds rate x 600 requests (rounded at random), placed by bench::
// append_window_arrivals. Generation is lazy and by window: the windows of all models line up at
// multiples of 600 s, so the workload draws one window of every model at a time, sorts it and
// hands it out; memory is the clients' windows (~64 bytes each, ~55 MB for the 422 published
// clients, each file loaded once and shared by its copies), ~200 bytes per model, and one
// window's requests across all models (48 bytes each: the window and a sort buffer). At 100,000
// models x 24 h (30 M requests) that is ~85 MB in all, drawn at ~12 M requests/s on one core.
// Thread-safety: the workload is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/base/status.h"
#include "tessera/sim/workload.h"
#include "tessera/sim/workload_lengths.h"

namespace tessera::sim {

struct ServeGenWorkloadOptions {
  // A ServeGen root (…/traces/servegen) or any folder under it (…/language/m-large): every
  // chunk-N-trace.csv below it is a client, ordered by folder then N.
  std::string dir;
  int64_t n_models = 1;
  double duration_s = 86400.0;  // from the start of a day; a partial last window is cut short
  double rate_scale = 1.0;      // multiplies every rate
  double max_peak_rps = 0.0;    // 0: no cap; else the busiest window of any model, after rate_scale
  uint64_t seed = 0;
  LengthSource lengths;
};

// Reads the clients that the models use (each once) and the length source; generates nothing.
// Errors: kInvalidArgument for n_models outside [1, 2^31), duration_s outside (0, 9e9), a
// negative rate_scale or max_peak_rps; kNotFound when `dir` does not exist or holds no client;
// a client's or the length trace's kCorruptData, with the file named. Any thread.
Result<std::unique_ptr<Workload>> make_servegen_workload(const ServeGenWorkloadOptions& options);

}  // namespace tessera::sim
