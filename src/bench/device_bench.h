// Measured ceilings of one OpenCL device, the device's twin of machine_bench.h: read bandwidth
// (device/cl/bench.cl's bench_read_*: a buffer in device memory streamed with float4 loads) and
// peak f32 FMA throughput (bench_fma_*: independent fma chains in registers on enough
// work-items to fill the device). `bench machine --device` prints them; `bench model --device` divides by
// them for MBU/MFU. Timing is wall time around Device::finish over passes of back-to-back
// launches long enough (min_pass_seconds) that the launch and wait overhead is a small share.
// Thread-safety: uses the Device from the calling thread only.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/base/status.h"
#include "tessera/device/device.h"

namespace tessera::bench {

struct DeviceCeilings {
  // The device, as `tessera info --devices` lists it.
  int index = 0;             // the N of opencl:N
  std::string name;
  std::string platform;
  std::string type;          // "gpu", "cpu", ...
  uint32_t compute_units = 0;
  // As MachineCeilings: the best pass is the ceiling (noise only lowers a pass), the median
  // shows the spread. GB = 1e9 bytes; f32, 2 FLOPs per fma lane.
  double read_gbps = 0.0;
  double fma_gflops = 0.0;
  double read_gbps_median = 0.0;
  double fma_gflops_median = 0.0;
  int64_t buffer_bytes = 0;       // the buffer bench_read streams (after the device's bounds)
  int reps = 0;                   // timed passes of each
  // Which of device/cl/bench.cl's shapes ran (the faster of each pair on this device):
  // bench_read_coalesced or bench_read_blocked, bench_fma_float4 or bench_fma_float16.
  std::string read_kernel;
  std::string fma_kernel;
  int read_launches = 0;          // launches per pass (each reads the buffer once)
  int fma_launches = 0;           // launches per pass
  int64_t fma_work_items = 0;
  int64_t fma_iterations = 0;     // per work-item per launch (8 chains of fma each)
};

struct DeviceBenchOptions {
  // Bounded by the device's largest allocation and half its global memory, rounded down to
  // whole slabs of the read kernel's work-groups; at least 1 MiB.
  int64_t buffer_bytes = int64_t{1} << 30;
  int reps = 5;
  // Each timed pass repeats its kernel until it lasts about this long (set from one timed
  // launch after a warm-up launch).
  double min_pass_seconds = 0.1;
};

// Builds device/cl/bench.cl on `device` and fills the buffer; for each ceiling, runs each of
// its kernel's shapes once after a warm-up and times `reps` passes of the faster. Errors: the device's (allocation, build, launch), and kInternal if a
// kernel's output is not finite (a broken driver, not a slow one). Frees its buffers on return.
Result<DeviceCeilings> measure_device(device::Device& device, const DeviceBenchOptions& options);

}  // namespace tessera::bench
