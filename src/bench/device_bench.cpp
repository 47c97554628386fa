#include "tessera/bench/device_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/bench/stats.h"
#include "tessera/device/cl_sources.h"

namespace tessera::bench {
namespace {

constexpr size_t kLocal = 256;           // work-items per group, where the kernel allows it
constexpr int kReadGroupsPerUnit = 16;   // the read kernels' work-groups per compute unit
constexpr int kFmaGroupsPerUnit = 8;     // the FMA kernels' (8 x 256 fills an SM's 2,048 threads)
constexpr uint32_t kFmaIterations = 8192;
constexpr int kMaxLaunchesPerPass = 4096;

size_t local_size(const device::Kernel& k, const device::DeviceInfo& info) {
  size_t local = std::min<size_t>(kLocal, k.max_work_group_size());
  local = std::min<size_t>(local, info.max_work_group_size);
  return std::max<size_t>(local, 1);
}

// One shape of a ceiling's kernel, its arguments set: `units` of work per launch (GB, GFLOP).
struct Shape {
  device::Kernel kernel;
  size_t global = 0;
  size_t local = 0;
  double units = 0.0;
};

// Seconds of `launches` back-to-back launches, from the first enqueue to finish().
Result<double> timed(device::Device& dev, const Shape& s, int launches) {
  const Clock* clock = real_clock();
  const int64_t t0 = clock->now_ns();
  for (int i = 0; i < launches; ++i) {
    TS_ASSIGN_OR_RETURN(device::Event e, dev.launch(s.kernel, {s.global}, {s.local}));
    (void)e;  // the queue is in order: finish() waits for every launch
  }
  TS_RETURN_IF_ERROR(dev.finish());
  return static_cast<double>(clock->now_ns() - t0) * 1e-9;
}

struct Passes {
  size_t shape = 0;           // the index of the faster shape
  int launches = 0;           // per pass
  std::vector<double> rates;  // units per second, one per pass
};

// Runs each shape once after a warm-up launch (the driver's first-launch work, page mapping),
// keeps the faster, and times `reps` passes of it, each as many launches as make
// min_pass_seconds by the single launch's time.
Result<Passes> fastest_passes(device::Device& dev, const std::vector<Shape>& shapes,
                              const DeviceBenchOptions& o) {
  Passes p;
  double best_rate = -1.0;
  double best_seconds = 0.0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    TS_ASSIGN_OR_RETURN(double warm, timed(dev, shapes[i], 1));
    (void)warm;
    TS_ASSIGN_OR_RETURN(double one, timed(dev, shapes[i], 1));
    const double rate = one > 0 ? shapes[i].units / one : 0.0;
    if (rate > best_rate) best_rate = rate, best_seconds = one, p.shape = i;
  }
  const double n = best_seconds > 0 ? std::ceil(o.min_pass_seconds / best_seconds) : 1.0;
  p.launches = static_cast<int>(std::clamp(n, 1.0, static_cast<double>(kMaxLaunchesPerPass)));
  const Shape& s = shapes[p.shape];
  for (int r = 0; r < std::max(1, o.reps); ++r) {
    TS_ASSIGN_OR_RETURN(double seconds, timed(dev, s, p.launches));
    p.rates.push_back(seconds > 0 ? s.units * p.launches / seconds : 0.0);
  }
  return p;
}

Status check_finite(device::Device& dev, const device::Buffer& out, const std::string& kernel) {
  float first = 0.0f;
  TS_RETURN_IF_ERROR(dev.read(out, 0, &first, sizeof(first)));
  if (!std::isfinite(first)) {
    return internal_error(fmt::format("device bench: {} wrote {} (expected a finite sum): the "
                                      "driver miscomputed it", kernel, first));
  }
  return Status::ok();
}

// The read ceiling: fills a buffer of equal slabs, one per work-group, each a whole number of
// work-groups' float4s (the blocked kernel gives each work-item an equal run), and streams it.
Status measure_read(device::Device& dev, const device::Program& program,
                    const DeviceBenchOptions& o, DeviceCeilings& c) {
  const device::DeviceInfo& info = dev.info();
  const size_t units = std::max<uint32_t>(info.compute_units, 1);
  const char* kNames[] = {"bench_read_coalesced", "bench_read_blocked"};
  std::vector<Shape> shapes(2);
  size_t local = kLocal;
  for (size_t i = 0; i < shapes.size(); ++i) {
    TS_ASSIGN_OR_RETURN(shapes[i].kernel, program.kernel(kNames[i]));
    local = std::min(local, local_size(shapes[i].kernel, info));
  }
  const size_t groups = units * kReadGroupsPerUnit;
  const uint64_t quantum = uint64_t{16} * groups * local;
  uint64_t bytes = static_cast<uint64_t>(std::max<int64_t>(o.buffer_bytes, int64_t{1} << 20));
  bytes = std::min(bytes, info.max_alloc_bytes);
  bytes = std::min(bytes, info.global_mem_bytes / 2);
  bytes = bytes / quantum * quantum;
  const uint64_t per_group = bytes / 16 / groups;
  if (bytes == 0 || per_group > UINT32_MAX) {
    return invalid_argument(fmt::format("device bench: {} allows no buffer of whole slabs of {} "
                                        "bytes ({} work-groups of {} float4s) under 4 G float4s "
                                        "per work-group",
                                        info.name, quantum, groups, local));
  }
  c.buffer_bytes = static_cast<int64_t>(bytes);

  TS_ASSIGN_OR_RETURN(device::Buffer src, dev.alloc(bytes));
  TS_ASSIGN_OR_RETURN(device::Buffer out, dev.alloc(groups * local * sizeof(float)));
  TS_ASSIGN_OR_RETURN(device::Kernel fill, program.kernel("bench_fill"));
  TS_RETURN_IF_ERROR(fill.set_arg(0, src));
  TS_RETURN_IF_ERROR(fill.set_arg(1, bytes / 16));
  const size_t fill_local = local_size(fill, info);
  TS_ASSIGN_OR_RETURN(device::Event filled,
                      dev.launch(fill, {units * 64 * fill_local}, {fill_local}));
  TS_RETURN_IF_ERROR(filled.wait());

  for (Shape& s : shapes) {
    TS_RETURN_IF_ERROR(s.kernel.set_arg(0, src));
    TS_RETURN_IF_ERROR(s.kernel.set_arg(1, static_cast<uint32_t>(per_group)));
    TS_RETURN_IF_ERROR(s.kernel.set_arg(2, out));
    s.global = groups * local;
    s.local = local;
    s.units = static_cast<double>(bytes) / 1e9;
  }
  TS_ASSIGN_OR_RETURN(Passes p, fastest_passes(dev, shapes, o));
  c.read_kernel = kNames[p.shape];
  c.read_launches = p.launches;
  c.read_gbps = summarize(p.rates).max;
  c.read_gbps_median = summarize(p.rates).median;
  return check_finite(dev, out, c.read_kernel);
}

// The FMA ceiling: kFmaGroupsPerUnit work-groups per compute unit of each shape.
Status measure_fma(device::Device& dev, const device::Program& program,
                   const DeviceBenchOptions& o, DeviceCeilings& c) {
  const device::DeviceInfo& info = dev.info();
  const size_t units = std::max<uint32_t>(info.compute_units, 1);
  const char* kNames[] = {"bench_fma_float4", "bench_fma_float16"};
  const int kLanes[] = {4, 16};
  std::vector<Shape> shapes(2);
  size_t out_floats = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    TS_ASSIGN_OR_RETURN(shapes[i].kernel, program.kernel(kNames[i]));
    shapes[i].local = local_size(shapes[i].kernel, info);
    shapes[i].global = units * kFmaGroupsPerUnit * shapes[i].local;
    // 8 chains of kLanes[i] lanes, 2 FLOPs per fma lane, per iteration.
    shapes[i].units = static_cast<double>(shapes[i].global) * kFmaIterations * 8.0 * kLanes[i] *
                      2.0 / 1e9;
    out_floats = std::max(out_floats, shapes[i].global);
  }
  TS_ASSIGN_OR_RETURN(device::Buffer out, dev.alloc(out_floats * sizeof(float)));
  for (Shape& s : shapes) {
    // a < 1 keeps each chain at a fixed point near b / (1 - a) = 1.
    TS_RETURN_IF_ERROR(s.kernel.set_arg(0, out));
    TS_RETURN_IF_ERROR(s.kernel.set_arg(1, kFmaIterations));
    TS_RETURN_IF_ERROR(s.kernel.set_arg(2, 0.999f));
    TS_RETURN_IF_ERROR(s.kernel.set_arg(3, 0.001f));
  }
  TS_ASSIGN_OR_RETURN(Passes p, fastest_passes(dev, shapes, o));
  c.fma_kernel = kNames[p.shape];
  c.fma_launches = p.launches;
  c.fma_work_items = static_cast<int64_t>(shapes[p.shape].global);
  c.fma_iterations = kFmaIterations;
  c.fma_gflops = summarize(p.rates).max;
  c.fma_gflops_median = summarize(p.rates).median;
  return check_finite(dev, out, c.fma_kernel);
}

}  // namespace

Result<DeviceCeilings> measure_device(device::Device& dev, const DeviceBenchOptions& o) {
  const device::DeviceInfo& info = dev.info();
  DeviceCeilings c;
  c.index = info.index;
  c.name = info.name;
  c.platform = info.platform;
  c.type = device::device_type_name(info.type);
  c.compute_units = info.compute_units;
  c.reps = std::max(1, o.reps);
  TS_ASSIGN_OR_RETURN(device::Program program,
                      dev.build_program("bench", {device::cl_source::kBench}, ""));
  // One after the other, each with its own buffers: the read buffer is freed before the FMA
  // passes run.
  TS_RETURN_IF_ERROR(measure_read(dev, program, o, c));
  TS_RETURN_IF_ERROR(measure_fma(dev, program, o, c));
  return c;
}

}  // namespace tessera::bench
