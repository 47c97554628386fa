// Machine-ceiling probes for `tessera bench machine`: a streaming read that touches every byte
// (memory bandwidth) and independent FMA chains (peak arithmetic). Kernels, not benchmarks: the
// bench layer times them. Each has a scalar version and SIMD versions chosen by CPUID.
// Thread-safety: pure functions; call from many threads at once to load every core.
#pragma once

#include <cstdint>
#include <string>

namespace tessera::kernels {

// Sums n floats (n % 64 == 0) with the widest loads available; the sum defeats dead-code removal.
float probe_read(const float* data, int64_t n);

struct FmaProbe {
  double result = 0.0;       // depends on every FMA, so none is optimized away
  double flops = 0.0;        // floating-point operations performed (an FMA counts 2)
  std::string isa;           // "avx512", "avx2" or "scalar"
};
// Runs `iterations` rounds of independent FMA chains in registers (no memory traffic).
FmaProbe probe_fma(int64_t iterations);
// The same with AVX-512 BF16 dot products (vdpbf16ps: per f32 lane two bf16 products and two
// adds, counted as 4 operations), the ceiling of gemm_bf16.h; isa "avx512_bf16". Where the CPU
// lacks it: nothing runs, flops 0, isa "none".
FmaProbe probe_bf16_dot(int64_t iterations);

}  // namespace tessera::kernels
