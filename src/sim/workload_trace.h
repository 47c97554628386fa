// The trace workload: one recorded trace (Azure LLM, Mooncake or Splitwise; bench/trace.h)
// replayed as-is — its arrival times (divided by time_scale) and lengths — split over n_models
// models. Entry j, in time order, goes to model j % n_models (kRoundRobin) or to a model drawn
// from (seed, j) (kSeeded: the same model counts on average, but bursts that round-robin spreads
// evenly can land on one model). For Mooncake, prefix_tokens is the number of leading hash-id
// blocks a request shares with any earlier request of the same model, times block_tokens and
// clipped to its input: the prefix-cache hits an unbounded per-model cache would see. Requests
// of one conversation only share blocks when they reach the same model, so the more models, the
// fewer hits. The whole (small) trace is held in memory: 20 bytes a request plus its blocks.
// Thread-safety: the workload is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tessera/base/status.h"
#include "tessera/sim/workload.h"

namespace tessera::sim {

enum class TraceAssignment { kRoundRobin, kSeeded };

struct TraceWorkloadOptions {
  std::string path;
  std::string format;  // "azure", "mooncake", "splitwise"; empty: detected from the file
  int64_t n_models = 1;
  TraceAssignment assignment = TraceAssignment::kRoundRobin;
  double time_scale = 1.0;        // simulated time = trace time / time_scale (> 1 compresses)
  int64_t max_requests = 0;       // the first N entries of the file (0: all)
  double duration_s = 0.0;        // keep arrivals before this simulated time (0: all of them)
  int32_t block_tokens = 512;     // Mooncake's hash-id block
  int32_t max_input_tokens = 0;   // clip (0: none); lengths are at least 1 (clip_lengths)
  int32_t max_output_tokens = 0;  // clip (0: none)
  uint64_t seed = 0;              // kSeeded only
};

// Reads and prepares the whole trace. Errors: kInvalidArgument for n_models outside [1, 2^31),
// time_scale <= 0, negative duration_s / max_requests / clips, block_tokens <= 0, an unknown
// format name; the trace's kNotFound / kCorruptData naming the file and line.
Result<std::unique_ptr<Workload>> make_trace_workload(const TraceWorkloadOptions& options);

}  // namespace tessera::sim
