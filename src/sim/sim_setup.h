// SimSetup: one `tessera sim` run from plain options, the command's flags: builds the workload
// (ServeGen clients scaled to many models, one recorded trace, or an exact schedule), sizes each
// model's deployment (naive and searched on the accelerator's roofline costs, or this CPU's
// measured costs from `bench model --json`), runs each policy by name through the simulator, prints
// the progress lines and the headline table, and writes the reports asked for (JSON, HTML, request
// and iteration CSVs, Chrome trace). The CLI only declares the flags and calls run_sim_setup.
// Thread-safety: run_sim_setup runs on the caller's thread; it writes to stdout and stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tessera/base/status.h"

namespace tessera::sim {

struct SimSetupOptions {
  std::string servegen = "../shared/traces/servegen";
  std::string trace;     // a recorded trace instead of ServeGen
  std::string schedule;  // an exact schedule (`bench fleet --arrivals-out`) instead
  int64_t models = 1000;
  double hours = 6.0;
  double rate_scale = 0.01;
  double max_peak_rps = 0.0;
  double time_scale = 1.0;
  std::string lengths = "../shared/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv";
  int32_t max_input = 8192;
  int32_t max_output = 2048;
  int32_t fixed_input = 0;  // > 0: fixed lengths instead of a trace
  int32_t fixed_output = 0;
  std::string accelerator = "h100";
  std::string accelerator_json;
  std::string shape;  // one shape for every model (else by ServeGen category)
  std::string dtype = "bf16";
  std::string bench_record;    // measured costs: `bench model --json`
  std::string resume_record;   // and `bench resume --json`
  double decode_step_s = 0.0;  // measured costs: given instead of the record's (0: the record's)
  double row_s = 0.0;
  double resume_s = -1.0;  // and instead of the resume record's (-1: the record's)
  double suspend_s = -1.0;
  int32_t max_running = 0;  // measured costs: the engine's batch limit
  bool shared_device = false;
  bool device_arbitration = false;
  bool round_robin = false;  // SimOptions::round_robin
  int32_t slo_window = 0;    // SimOptions::slo_window
  int32_t max_batch_tokens = 0;  // measured costs: the engine's rows per step (0: 2048)
  int64_t active_bytes = 0;  // measured costs: weights + KV pool of one replica (the KV from it)
  double schedule_s = 0.0;   // --schedule: the span (0: to the last arrival)
  std::string policies = "all";  // "all" or a comma list
  double keep_alive_s = 300.0;
  double histogram_bin_s = 60.0;
  double headroom = 1.0;
  double ttft_slo_s = 2.0;
  double tpot_slo_s = 0.1;
  int32_t pool_accelerators = 8;
  int32_t pool_max_models = 32;
  double pool_overcommit = 4.0;
  double pool_fill = 0.8;
  double deadline_s = 60.0;
  uint64_t seed = 1;
  std::string json_out, html_out, trace_out;
  // The Chart.js source for html_out, called only then (empty: tables only).
  std::function<std::string()> chart_js;
  std::string requests_out;    // every request's outcome (CSV)
  std::string iterations_out;  // every arbitrated iteration (CSV)
  int32_t step_block = 0;        // SimOptions::step_block
  std::string step_multipliers;  // CSV: multiplier,switch,prompt (SimOptions::step_multipliers)
  double switch_s = 0.0;         // SimOptions::device_switch_ns
  std::string device_speed;      // CSV: t_s,factor (SimOptions::device_speed)
  int64_t trace_events = 20000;
};

// Runs every policy of `options` and writes its outputs. Errors: the first failure, with its
// file or policy (unreadable or malformed inputs, unknown accelerator, shape or policy, flags
// that need another flag, unwritable outputs); outputs written before it stay.
Status run_sim_setup(const SimSetupOptions& options);

}  // namespace tessera::sim
