// Measured ceilings of this machine: memory read bandwidth (streaming reads over a buffer much
// larger than the caches, on every thread) and peak FMA throughput (independent FMA chains in
// registers, on every thread). The roofline figures of `bench model` divide by these.
// Thread-safety: runs its own ThreadPool; call from one thread.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::bench {

struct MachineCeilings {
  // A ceiling is what the hardware allows, and noise (other tenants, frequency dips) only ever
  // lowers a pass, so the ceiling is the best pass; the median is kept to show the spread.
  double read_gbps = 0.0;     // best over repetitions, GB = 1e9 bytes
  double fma_gflops = 0.0;    // best over repetitions, f32
  double read_gbps_median = 0.0;
  double fma_gflops_median = 0.0;
  // Fresh memory: microseconds to write the first byte of each 4 KiB page of a new anonymous
  // mapping (the kernel's fault, allocation and zeroing; on a VM also the host backing a page the
  // guest had given back), median over repetitions of a 32 MiB mapping. What a buffer allocated
  // anew costs before its first use: a resumed engine's KV pool, a suspension's kept blocks.
  double first_touch_us_per_page = 0.0;
  std::string fma_isa;        // which probe ran: avx512, avx2, scalar
  int threads = 0;
  int64_t buffer_bytes = 0;
  int reps = 0;
};

struct MachineBenchOptions {
  int threads = 0;                        // 0: all hardware threads
  int64_t buffer_bytes = int64_t{1} << 30;  // 1 GiB, far past any L3
  int reps = 5;
};

MachineCeilings measure_machine(const MachineBenchOptions& options);

// MachineCeilings::first_touch_us_per_page over a fresh mapping of `bytes` (median of `reps`).
double first_touch_us_per_page(int64_t bytes, int reps);

// Peak BF16 dot-product throughput (kernels::probe_bf16_dot: vdpbf16ps chains on every thread,
// 4 operations per f32 lane), the ceiling `--compute bf16` training's MFU is against: the best of
// `reps` passes after a warm-up, GFLOP/s; 0 (and *isa "none") where the CPU lacks AVX-512 BF16.
double measure_bf16_gflops(int threads, int reps, std::string* isa);

}  // namespace tessera::bench
