// Workload: the simulator's traffic, a time-ordered stream of requests over many models, made
// lazily so that 100,000+ models over 24 h (tens of millions of requests) fit in little memory.
// Each model carries, up front and without generating, the rates its stream was drawn from, so a
// simulator can size the fleet before it runs. Factories live beside it: workload_servegen.h
// (ServeGen client statistics, scaled to many models), workload_trace.h (one recorded trace
// replayed as-is), with request lengths from workload_lengths.h.
// Thread-safety: a Workload is used by one thread at a time; summarize() drains the one it gets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::sim {

// One request. Times are simulated nanoseconds from the workload's start.
struct SimRequest {
  int64_t t_ns = 0;
  int32_t model = 0;  // index into Workload::models()
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  // Leading prompt tokens shared with an earlier request of the same model (from Mooncake hash
  // ids; a whole number of blocks, clipped to input_tokens, so it may equal it); 0 otherwise.
  int32_t prefix_tokens = 0;
};

// What a model's stream is drawn from, known before any request is made.
struct WorkloadModel {
  std::string name;
  // Where its traffic comes from, e.g. "servegen/language/m-large/chunk-12 day 3".
  std::string source;
  double mean_rps = 0.0;           // expected_requests / the workload's duration
  double peak_rps = 0.0;           // of its busiest 10-minute window in the span
  double expected_requests = 0.0;  // the mean of its request count over the span
};

class Workload {
 public:
  virtual ~Workload();
  // One entry per model; the index is SimRequest::model. Stable for the workload's lifetime.
  virtual const std::vector<WorkloadModel>& models() const = 0;
  // The next request, or false when the stream has ended (and on every call after). Requests come
  // in ascending t_ns; ties are ordered by model index, then by the model's own sequence. The
  // stream is a pure function of the options and seed: the same options give the same stream.
  virtual bool next(SimRequest& out) = 0;
  // Every arrival lies in [0, duration_s()) of simulated time.
  virtual double duration_s() const = 0;
  // One line for logs and reports: source, models, span, scaling, seed, lengths.
  virtual std::string describe() const = 0;
};

// A workload over requests already in memory (a recorded trace, a schedule, a test's script).
// Preconditions: `requests` ascending by t_ns (ties by model), every model index valid.
std::unique_ptr<Workload> make_in_memory_workload(std::vector<WorkloadModel> models,
                                                  std::vector<SimRequest> requests,
                                                  double duration_s, std::string description);

// Counts of a drained stream, for tests and for a simulator's sizing pass.
struct WorkloadSummary {
  int64_t requests = 0;
  double duration_s = 0.0;  // the workload's span (Workload::duration_s), not the last arrival
  int64_t first_t_ns = -1;  // -1 when there were no requests
  int64_t last_t_ns = -1;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t prefix_tokens = 0;
  bool ordered = true;  // every request came after the one before it, ties by model index
  std::vector<int64_t> per_model;      // requests per model
  std::vector<double> peak_rps;        // per model: requests of its busiest window / window_s
};

// The seed of sub-stream `index` (a model, a client) under `seed`: splitmix64 of both, so nearby
// seeds and indices give unrelated generators. What the factories seed per-model Rngs with.
uint64_t stream_seed(uint64_t seed, uint64_t index);

// Drains `workload` (it is at its end afterwards) and counts what came out; peak_rps uses windows
// of `window_s` seconds aligned at 0. Any thread, one at a time per workload. Preconditions:
// window_s > 0; every request's model indexes workload.models().
WorkloadSummary summarize(Workload& workload, double window_s = 600.0);

}  // namespace tessera::sim
