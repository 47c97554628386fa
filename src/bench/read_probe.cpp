#include "tessera/bench/read_probe.h"

#include <algorithm>
#include <atomic>

#include "tessera/base/clock.h"
#include "tessera/kernels/probe.h"

namespace tessera::bench {
namespace {

// Thread t's slice of n floats: whole 64-float blocks (probe_read's unit), the last thread
// taking what is left.
std::pair<int64_t, int64_t> slice(int64_t n, int t, int nt) {
  const int64_t b = (n / nt * t) & ~int64_t{63};
  const int64_t e = t + 1 == nt ? n : (n / nt * (t + 1)) & ~int64_t{63};
  return {b, e};
}

}  // namespace

Result<ReadProbe> ReadProbe::create(int64_t bytes, ThreadPool& pool) {
  ReadProbe p;
  p.n_floats_ = (std::max<int64_t>(bytes, 1 << 20) / 4) & ~int64_t{1023};
  TS_ASSIGN_OR_RETURN(p.buffer_, PageBuffer::allocate(static_cast<size_t>(p.bytes())));
  // Huge pages where offered, as the weight images get (model/llama.cpp), so the probe reads
  // memory the way the model's weights are read.
  p.buffer_.advise_huge_pages();
  auto* f = reinterpret_cast<float*>(p.buffer_.data());
  pool.run([&](int t, int nt) {
    const auto [b, e] = slice(p.n_floats_, t, nt);
    for (int64_t i = b; i < e; ++i) f[i] = static_cast<float>(i & 7);
  });
  return p;
}

double ReadProbe::pass(ThreadPool& pool) const {
  const auto* f = reinterpret_cast<const float*>(buffer_.data());
  std::atomic<float> sink{0.0f};
  const int64_t t0 = real_clock()->now_ns();
  pool.run([&](int t, int nt) {
    const auto [b, e] = slice(n_floats_, t, nt);
    sink.fetch_add(kernels::probe_read(f + b, e - b), std::memory_order_relaxed);
  });
  const double s = static_cast<double>(real_clock()->now_ns() - t0) * 1e-9;
  // The sum keeps the reads observable; it is finite for the values written above.
  return sink.load() == -1.0f ? 0.0 : static_cast<double>(bytes()) / s / 1e9;
}

}  // namespace tessera::bench
