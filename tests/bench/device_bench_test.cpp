// The device ceilings (bench/device_bench.h) on OpenCL device 0 (PoCL in CI): positive, finite
// figures, the best pass at least the median, and the buffer within the request and whole
// slabs of the read kernel's work-groups. Skips where the machine has no OpenCL.
#include "tessera/bench/device_bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace tessera::bench {
namespace {

TEST(DeviceBenchTest, MeasuresPositiveCeilingsOnWholeSlabs) {
  auto dev = device::Device::open(0);
  if (!dev.is_ok() && dev.status().code() == ErrorCode::kUnavailable) {
    GTEST_SKIP() << "no OpenCL here: " << dev.status().message();
  }
  ASSERT_TRUE(dev.is_ok()) << dev.status().to_string();
  DeviceBenchOptions o;
  o.buffer_bytes = 3'000'000;  // rounded down to whole slabs
  o.reps = 2;
  o.min_pass_seconds = 0.01;
  auto c = measure_device(*dev, o);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->name, dev->info().name);
  EXPECT_EQ(c->reps, 2);
  // float4s for each of 16 work-groups per compute unit
  const int64_t slab = int64_t{16} * 16 * std::max<int64_t>(dev->info().compute_units, 1);
  EXPECT_GT(c->buffer_bytes, 0);
  EXPECT_LE(c->buffer_bytes, o.buffer_bytes);
  EXPECT_EQ(c->buffer_bytes % slab, 0);
  for (double v : {c->read_gbps, c->fma_gflops, c->read_gbps_median, c->fma_gflops_median}) {
    EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  }
  EXPECT_LE(c->read_gbps_median, c->read_gbps);
  EXPECT_LE(c->fma_gflops_median, c->fma_gflops);
  EXPECT_GE(c->read_launches, 1);
  EXPECT_GE(c->fma_launches, 1);
  EXPECT_TRUE(c->read_kernel == "bench_read_coalesced" || c->read_kernel == "bench_read_blocked")
      << c->read_kernel;
  EXPECT_TRUE(c->fma_kernel == "bench_fma_float4" || c->fma_kernel == "bench_fma_float16")
      << c->fma_kernel;
  EXPECT_GT(c->fma_work_items, 0);
  EXPECT_EQ(dev->memory().n_buffers, 0u);  // its buffers are freed on return
}

}  // namespace
}  // namespace tessera::bench
