// `bench fleet`: many models on one device, one ServeGen client's arrivals per model
// (time-compressed), replayed once per idle policy (fleet_replay.h) so the policies compare side
// by side; optionally the schedule (for `tessera sim --schedule`), every request's TTFT and the
// shared device's iterations as CSV. The caller reads the models (serve's fleet config) and
// prints. Thread-safety: call from one thread.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/bench/fleet_replay.h"
#include "tessera/bench/servegen.h"

namespace tessera::bench {

struct FleetBenchOptions {
  std::vector<fleet::FleetModelSpec> specs;  // the models, in order
  std::string servegen_dir;                  // ServeGen client traces (NAME.csv)
  std::string clients;                       // comma-separated stems, one per model; empty: picked
  std::string policies = "always-on,fixed,adaptive";  // comma-separated
  ServeGenReplayOptions replay;              // the span, compression and peak rate; seed of model 0
  FleetReplayOptions run;                    // the replay's settings (models: filled by the plan)
  std::string requests_out;                  // non-empty: every request's TTFT per policy (CSV)
  std::string iterations_out;                // non-empty: the shared device's iterations (CSV)
};

// A ServeGen client: its file stem and windows.
using ServeGenClient = std::pair<std::string, std::vector<ServeGenWindow>>;

// One client per model: the named ones (`clients`), else clients with traffic in the span, ranked
// by how many windows they are active in and picked evenly over that ranking (sparse to busy).
// Errors: kInvalidArgument (an unreadable folder, too few clients), a client file's.
Result<std::vector<ServeGenClient>> pick_servegen_clients(const FleetBenchOptions& options, size_t n);

// The replay: options.run with one model per spec, fed its client's arrivals (seed + index).
Result<FleetReplayOptions> plan_fleet_bench(const FleetBenchOptions& options);

// Every request in time order, "model,t_s,input_tokens,output_tokens": the schedule
// `tessera sim --schedule` replays. Errors: kIoError.
Status write_fleet_arrivals(const std::string& path, const FleetReplayOptions& run);

struct FleetBenchResult {
  std::vector<FleetReplayResult> results;  // one per policy, in order
  nlohmann::json records;                  // the same as JSON records (array)
};

// Replays `run` once per policy; on_policy (may be empty) sees each result as it ends.
// Errors: a replay's (with context "policy NAME"), kIoError for the CSVs.
Result<FleetBenchResult> run_fleet_bench(const FleetBenchOptions& options, FleetReplayOptions run,
                                         const std::function<void(const FleetReplayResult&)>& on_policy);

// The whole run as one JSON object (environment, span, settings, policies).
nlohmann::json fleet_bench_json(const FleetBenchOptions& options, const FleetReplayOptions& run,
                                const FleetBenchResult& result);

}  // namespace tessera::bench
