#include "tessera/sim/accelerator.h"

#include <array>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tessera::sim {
namespace {

// Public figures (peak, per accelerator) and where they come from:
//
// | kind    | memory       | memory BW | dense BF16    | host link (peak)      | interconnect     |
// |---------|--------------|-----------|---------------|-----------------------|------------------|
// | h100    | 80 GB HBM3   | 3.35 TB/s | 989 TFLOP/s   | PCIe Gen5 x16: 128    | NVLink 4: 900    |
// |         |              |           | (1,979 sparse)| GB/s bidir = 64/dir   | GB/s bidir = 450 |
// | h200    | 141 GB HBM3e | 4.8 TB/s  | 989 TFLOP/s   | as H100               | as H100          |
// | tpu-v5e | 16 GB HBM2   | 819 GB/s  | 197 TFLOP/s   | not published (below) | ICI: 400 GB/s    |
// |         |              |           |               |                       | bidir = 200/dir  |
// Sources: "NVIDIA H100 Tensor Core GPU Datasheet" (H100 SXM column); "NVIDIA H200 Tensor Core
// GPU Datasheet" (H200 SXM column); Google Cloud's "TPU v5e" system architecture page
// (cloud.google.com/tpu/docs/v5e, key chip specifications; older versions list the ICI as
// 1,600 Gbps, the same 200 GB/s).
//
// Assumptions (not from datasheets; change them per fleet with accelerator_from_json):
//   - bw_efficiency 0.8 and flops_efficiency 0.6: what well-tuned serving engines reach on
//     decode (memory-bound) and prefill (compute-bound) matmuls respectively.
//   - host link: ~55 GB/s achievable of PCIe Gen5 x16's 64 GB/s per direction (pinned-memory
//     copies); ~25 GB/s of PCIe Gen4 x16's 32 GB/s for the TPU host.
//   - disk: one local NVMe SSD per accelerator, ~5 GB/s achieved of a Gen4 drive's ~7 GB/s
//     sequential read, for the GPU servers; ~2 GB/s for a TPU VM's network-attached disk.
//   - step overhead 1 ms: scheduling, sampling and kernel launches of one engine iteration.
//   - cost_per_hour 0: prices vary by provider and contract; set it in a fleet config.
// Memory sizes are the datasheets' decimal gigabytes.
constexpr double kGB = 1e9;
constexpr double kTB = 1e12;

const std::array<AcceleratorSpec, 3>& builtin_specs() {
  static const std::array<AcceleratorSpec, 3> kSpecs = {{
      {"h100", 80 * kGB, 3.35 * kTB, 989e12, 55 * kGB, 5 * kGB, 450 * kGB, 1e-3, 0.8, 0.6, 0.0},
      {"h200", 141 * kGB, 4.8 * kTB, 989e12, 55 * kGB, 5 * kGB, 450 * kGB, 1e-3, 0.8, 0.6, 0.0},
      {"tpu-v5e", 16 * kGB, 819 * kGB, 197e12, 25 * kGB, 2 * kGB, 200 * kGB, 1e-3, 0.8, 0.6, 0.0},
  }};
  return kSpecs;
}

std::string known_names() {
  std::string s;
  for (const auto& n : accelerator_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

Result<AcceleratorSpec> find_accelerator(std::string_view name) {
  for (const auto& s : builtin_specs()) {
    if (s.name == name) return s;
  }
  return invalid_argument(fmt::format("unknown accelerator '{}'; known: {} (or define one in the "
                                      "fleet config)",
                                      name, known_names()));
}

std::vector<std::string> accelerator_names() {
  std::vector<std::string> out;
  for (const auto& s : builtin_specs()) out.push_back(s.name);
  return out;
}

Status validate_accelerator(const AcceleratorSpec& s) {
  std::string bad;
  auto positive = [&](const char* field, double v) {
    if (!(v > 0.0) || !std::isfinite(v)) bad += fmt::format(" {} must be > 0 (got {});", field, v);
  };
  positive("memory_bytes", s.memory_bytes);
  positive("memory_bw_Bps", s.memory_bw_Bps);
  positive("flops", s.flops);
  positive("host_link_Bps", s.host_link_Bps);
  positive("disk_Bps", s.disk_Bps);
  positive("interconnect_Bps", s.interconnect_Bps);
  if (!(s.step_overhead_s >= 0.0)) {
    bad += fmt::format(" step_overhead_s must be >= 0 (got {});", s.step_overhead_s);
  }
  if (!(s.bw_efficiency > 0.0 && s.bw_efficiency <= 1.0)) {
    bad += fmt::format(" bw_efficiency must be in (0, 1] (got {});", s.bw_efficiency);
  }
  if (!(s.flops_efficiency > 0.0 && s.flops_efficiency <= 1.0)) {
    bad += fmt::format(" flops_efficiency must be in (0, 1] (got {});", s.flops_efficiency);
  }
  if (!(s.cost_per_hour >= 0.0)) {
    bad += fmt::format(" cost_per_hour must be >= 0 (got {});", s.cost_per_hour);
  }
  if (!bad.empty()) {
    bad.pop_back();
    return invalid_argument(fmt::format("accelerator '{}':{}", s.name, bad));
  }
  return Status::ok();
}

Result<AcceleratorSpec> accelerator_from_json(const nlohmann::json& j) {
  if (!j.is_object()) {
    return invalid_argument("accelerator spec: expected a JSON object, found " +
                            std::string(j.type_name()));
  }
  AcceleratorSpec s;
  std::vector<std::string> missing;
  if (j.contains("name") && j["name"].is_string()) {
    s.name = j["name"].get<std::string>();
  } else {
    missing.push_back("name (string)");
  }
  struct Field {
    const char* key;
    double AcceleratorSpec::*member;
    bool required;
  };
  static constexpr Field kFields[] = {
      {"memory_bytes", &AcceleratorSpec::memory_bytes, true},
      {"memory_bw_Bps", &AcceleratorSpec::memory_bw_Bps, true},
      {"flops", &AcceleratorSpec::flops, true},
      {"host_link_Bps", &AcceleratorSpec::host_link_Bps, true},
      {"disk_Bps", &AcceleratorSpec::disk_Bps, true},
      {"interconnect_Bps", &AcceleratorSpec::interconnect_Bps, true},
      {"step_overhead_s", &AcceleratorSpec::step_overhead_s, true},
      {"bw_efficiency", &AcceleratorSpec::bw_efficiency, true},
      {"flops_efficiency", &AcceleratorSpec::flops_efficiency, true},
      {"cost_per_hour", &AcceleratorSpec::cost_per_hour, false},
  };
  for (const Field& f : kFields) {
    auto it = j.find(f.key);
    if (it == j.end()) {
      if (f.required) missing.push_back(f.key);
    } else if (!it->is_number()) {
      missing.push_back(fmt::format("{} (a number, found {})", f.key, it->type_name()));
    } else {
      s.*f.member = it->get<double>();
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return invalid_argument(fmt::format("accelerator spec '{}': missing or invalid fields: {}",
                                        s.name, list));
  }
  TS_RETURN_IF_ERROR(validate_accelerator(s));
  return s;
}

}  // namespace tessera::sim
