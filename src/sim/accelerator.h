// AcceleratorSpec: the handful of numbers a cost model needs about one accelerator (memory, the
// bandwidth and FLOP/s ceilings with the fractions of them an inference engine achieves, and the
// links used to move weights and activations), with built-in specs taken from public datasheets
// and a JSON reader so a fleet config can describe a kind of its own.
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessera/base/status.h"

namespace tessera::sim {

// All rates are per accelerator, in bytes (or FLOPs) per second, at their datasheet peak unless
// the comment says "achievable"; the two *_efficiency fields turn peaks into what is reached.
struct AcceleratorSpec {
  std::string name;
  double memory_bytes = 0.0;      // device memory (HBM)
  double memory_bw_Bps = 0.0;     // device memory bandwidth, peak
  double flops = 0.0;             // dense BF16 matrix FLOP/s, peak (no sparsity)
  double host_link_Bps = 0.0;     // host DRAM <-> device, achievable, one direction: suspend/resume
  double disk_Bps = 0.0;          // cold load from storage into device memory, achievable
  double interconnect_Bps = 0.0;  // between the accelerators of one tensor-parallel replica,
                                  // one direction
  double step_overhead_s = 0.0;   // fixed cost of one engine iteration (launches, sampling, host)
  double bw_efficiency = 0.0;     // achievable fraction of memory_bw_Bps, in (0, 1]
  double flops_efficiency = 0.0;  // achievable fraction of flops, in (0, 1]
  double cost_per_hour = 0.0;     // optional price for cost reports; 0 when unknown
};

// The built-in specs by name ("h100", "h200", "tpu-v5e"); see accelerator.cpp for the sources.
// Errors: kInvalidArgument naming the known kinds.
Result<AcceleratorSpec> find_accelerator(std::string_view name);
// Names of the built-in specs, in a stable order.
std::vector<std::string> accelerator_names();

// Reads a spec from a JSON object whose keys are the field names above. Every field except
// cost_per_hour is required. Errors: kInvalidArgument naming each missing or non-numeric field,
// or a value out of range (rates and memory must be > 0, efficiencies in (0, 1], overhead >= 0).
Result<AcceleratorSpec> accelerator_from_json(const nlohmann::json& j);

// Checks the ranges accelerator_from_json enforces (for specs built in code).
Status validate_accelerator(const AcceleratorSpec& spec);

}  // namespace tessera::sim
