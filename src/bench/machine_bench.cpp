#include "tessera/bench/machine_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/page_buffer.h"
#include "tessera/base/thread_pool.h"
#include "tessera/bench/read_probe.h"
#include "tessera/bench/stats.h"
#include "tessera/kernels/probe.h"

namespace tessera::bench {

MachineCeilings measure_machine(const MachineBenchOptions& o) {
  MachineCeilings c;
  c.threads = o.threads > 0 ? o.threads : hardware_threads();
  c.reps = std::max(1, o.reps);
  ThreadPool pool(c.threads);
  const Clock* clock = real_clock();

  // Bandwidth: each thread streams its own contiguous slice (read_probe.h).
  auto probe = ReadProbe::create(o.buffer_bytes, pool);
  if (!probe.is_ok()) return c;
  c.buffer_bytes = probe->bytes();
  std::vector<double> gbps;
  for (int r = 0; r < c.reps + 1; ++r) {  // first pass warms up
    const double g = probe->pass(pool);
    if (r > 0) gbps.push_back(g);
  }
  c.read_gbps = summarize(gbps).max;
  c.read_gbps_median = summarize(gbps).median;

  // Peak FMA: every thread runs independent chains; long enough (~0.2 s) to reach steady clocks.
  std::atomic<float> sink{0.0f};
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
  c.first_touch_us_per_page = first_touch_us_per_page(int64_t{32} << 20, c.reps);
  return c;
}

double first_touch_us_per_page(int64_t bytes, int reps) {
  constexpr size_t kPage = 4096;
  const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, kPage)) / kPage * kPage;
  std::vector<double> us;
  for (int r = 0; r < std::max(1, reps); ++r) {
    auto buffer = PageBuffer::allocate(n);
    if (!buffer.is_ok()) return 0.0;
    volatile std::byte* p = buffer->data();
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t off = 0; off < n; off += kPage) p[off] = std::byte{1};
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    us.push_back(s * 1e6 / static_cast<double>(n / kPage));
  }
  return summarize(us).median;
}

double measure_bf16_gflops(int threads, int reps, std::string* isa) {
  ThreadPool pool(threads > 0 ? threads : hardware_threads());
  const int64_t iters = 20'000'000;
  std::atomic<float> sink{0.0f};
  double best = 0.0;
  *isa = "none";
  for (int r = 0; r < reps + 1; ++r) {  // first pass warms up
    std::vector<double> flops(static_cast<size_t>(pool.size()));
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int t, int) {
      const kernels::FmaProbe p = kernels::probe_bf16_dot(iters);
      flops[static_cast<size_t>(t)] = p.flops;
      if (t == 0) *isa = p.isa;
      sink.store(sink.load() + static_cast<float>(p.result));
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0;
    for (double f : flops) total += f;
    if (r > 0 && total > 0) best = std::max(best, total / s / 1e9);
  }
  if (sink.load() == 12345.0f) best += 0.0;  // keeps `sink` observable
  return best;
}

}  // namespace tessera::bench
