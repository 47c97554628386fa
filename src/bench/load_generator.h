// LoadGenerator: the harness. It draws a schedule up front from a seed, issues each query to a
// SystemUnderTest at its scheduled moment (open loop) or when a slot frees (closed loop), and
// stamps every report with its Clock. Latency is measured from each query's SCHEDULED time, so a
// sender that falls behind (a stalled backend, a full in-flight cap) counts against the system;
// the lag between scheduled and actual send is kept separately as the client-side queueing delay.
//
//   offline       every query scheduled at t=0 (throughput)
//   server        open loop: arrivals from a Poisson/gamma/constant process at a target rate
//   single-stream closed loop, one query in flight: the next is scheduled when one completes
//   concurrency   closed loop, N in flight
//   trace         open loop at the times a trace recorded (sample i at trace time i)
//
// A run issues at least `min_queries` queries and lasts at least `min_duration_s` (open loop:
// the schedule is drawn long enough; closed loop: issuing continues until both hold). Warm-up
// queries run first, to completion, and are recorded but flagged, never counted.
// Thread-safety: run() is called from one thread, which becomes the issuing thread; the
// observer side is called from backend threads.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/bench/arrival.h"
#include "tessera/bench/query_sample_library.h"
#include "tessera/bench/sleeper.h"
#include "tessera/bench/system_under_test.h"

namespace tessera::bench {

enum class Scenario { kOffline, kServer, kSingleStream, kConcurrency, kTrace };
std::string_view scenario_name(Scenario s);  // "offline", "server", "single-stream", ...
Result<Scenario> parse_scenario(std::string_view name);
bool is_closed_loop(Scenario s);

struct Progress {
  bool warmup = false;
  int64_t planned = 0;  // queries in the schedule (closed loop: the minimum)
  int64_t issued = 0;
  int64_t completed = 0;  // terminal calls, errors included
  int64_t errors = 0;
  int64_t in_flight = 0;
  int64_t output_tokens = 0;
  double elapsed_s = 0.0;
};

struct TestSettings {
  Scenario scenario = Scenario::kServer;
  ArrivalProcess arrivals;       // kServer
  int32_t concurrency = 0;       // kConcurrency: N in flight; open loop: cap on in flight (0 none)
  int64_t min_queries = 100;
  double min_duration_s = 0.0;
  int32_t warmup_queries = 0;
  uint64_t seed = 0;             // arrival times and the order samples are drawn in
  bool shuffle_samples = false;  // draw samples at random (seeded) instead of in order
  std::vector<double> trace_times_s;  // kTrace: arrival time of sample i (time scale applied)
  // Called on the issuing thread about every progress_interval_s, and once at the end.
  std::function<void(const Progress&)> on_progress;
  double progress_interval_s = 0.25;
};

// Checks the settings against a library of `library_size` samples.
Status validate(const TestSettings& settings, size_t library_size);

struct ScheduledQuery {
  double t_s = -1.0;  // from the run's start; -1 in closed loop (when a slot frees)
  size_t sample_index = 0;
};
// The measured part of the schedule, drawn from settings.seed. Closed loop: min_queries entries
// (more are appended in the same cyclic order while min_duration_s has not passed).
std::vector<ScheduledQuery> draw_schedule(const TestSettings& settings, size_t library_size);

// A time that did not happen (no output, no terminal call).
inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

// What happened to one query. Times are nanoseconds from the measured run's start (warm-up
// queries have negative times).
struct QueryRecord {
  uint64_t id = 0;
  size_t sample_index = 0;
  bool warmup = false;
  int64_t scheduled_ns = 0;
  int64_t issued_ns = 0;
  int64_t first_token_ns = kNoTime;  // kNoTime: no output arrived
  int64_t end_ns = kNoTime;          // terminal call
  std::vector<int64_t> chunk_ns;      // arrival of each streamed chunk
  std::vector<int32_t> chunk_tokens;  // tokens in each chunk
  int32_t input_tokens = 0;     // from the backend when it knows, else the sample's intent
  int32_t output_tokens = 0;    // from the backend when it knows, else the chunks' sum
  bool output_tokens_exact = false;
  double server_ttft_ms = -1;  // as the server reported them (CompletionInfo), -1 if not
  double server_e2e_ms = -1;
  bool ok = false;
  std::optional<QueryError> error;

  double queue_delay_s() const { return (issued_ns - scheduled_ns) * 1e-9; }
  bool has_first_token() const { return first_token_ns != kNoTime; }
  bool has_end() const { return end_ns != kNoTime; }
};

struct RunResult {
  std::vector<QueryRecord> records;  // warm-up first, then measured, by id
  double duration_s = 0.0;  // measured start to the last measured terminal call
  int64_t measured_queries = 0;
};

class LoadGenerator {
 public:
  // All pointers are borrowed and must outlive run().
  LoadGenerator(SystemUnderTest* sut, const QuerySampleLibrary* library, Sleeper* sleeper);
  ~LoadGenerator();
  // Calls sut->prepare(library) then runs the test. Errors: kInvalidArgument for bad settings,
  // or prepare()'s. Query failures are not errors of the run: they are in the records.
  Result<RunResult> run(const TestSettings& settings);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::bench
