#include "tessera/bench/machine_bench.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/thread_pool.h"
#include "tessera/bench/stats.h"
#include "tessera/kernels/probe.h"

namespace tessera::bench {

MachineCeilings measure_machine(const MachineBenchOptions& o) {
  MachineCeilings c;
  c.threads = o.threads > 0 ? o.threads : hardware_threads();
  c.reps = std::max(1, o.reps);
  ThreadPool pool(c.threads);
  const Clock* clock = real_clock();

  // Bandwidth: each thread streams its own contiguous slice; the buffer is touched first so
  // page faults are not timed.
  const int64_t n = (std::max<int64_t>(o.buffer_bytes, 1 << 20) / 4) & ~int64_t{1023};
  c.buffer_bytes = n * 4;
  std::unique_ptr<float, decltype(&std::free)> buf(
      static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>(n) * 4)), &std::free);
  if (!buf) return c;
  pool.parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) buf.get()[i] = static_cast<float>(i & 7);
  });
  std::atomic<float> sink{0.0f};
  std::vector<double> gbps;
  for (int r = 0; r < c.reps + 1; ++r) {  // first pass warms up
    const int64_t t0 = clock->now_ns();
    pool.run([&](int t, int nt) {
      const int64_t b = (n / nt * t) & ~int64_t{63};
      const int64_t e = t + 1 == nt ? n : (n / nt * (t + 1)) & ~int64_t{63};
      sink.store(sink.load() + kernels::probe_read(buf.get() + b, e - b));
    });
    const double s = static_cast<double>(clock->now_ns() - t0) * 1e-9;
    if (r > 0) gbps.push_back(static_cast<double>(c.buffer_bytes) / s / 1e9);
  }
  c.read_gbps = summarize(gbps).max;
  c.read_gbps_median = summarize(gbps).median;

  // Peak FMA: every thread runs independent chains; long enough (~0.2 s) to reach steady clocks.
  std::vector<double> gflops;
  const int64_t iters = 20'000'000;
  for (int r = 0; r < c.reps + 1; ++r) {
    std::vector<double> flops(static_cast<size_t>(c.threads));
    const int64_t t0 = clock->now_ns();
    pool.run([&](int t, int) {
      const kernels::FmaProbe p = kernels::probe_fma(iters);
      flops[static_cast<size_t>(t)] = p.flops;
      if (t == 0) c.fma_isa = p.isa;
      sink.store(sink.load() + static_cast<float>(p.result));
    });
    const double s = static_cast<double>(clock->now_ns() - t0) * 1e-9;
    double total = 0;
    for (double f : flops) total += f;
    if (r > 0) gflops.push_back(total / s / 1e9);
  }
  c.fma_gflops = summarize(gflops).max;
  c.fma_gflops_median = summarize(gflops).median;
  if (sink.load() == 12345.0f) c.reps += 0;  // keeps `sink` observable
  return c;
}

}  // namespace tessera::bench
