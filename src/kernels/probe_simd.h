// SIMD variants of the machine probes (probe.h), one translation unit per ISA, each compiled with
// its own flags. Call only when CPUID reports the ISA. Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace tessera::kernels {

float probe_read_avx2(const float* data, int64_t n);
double probe_fma_avx2(int64_t iterations, double* flops);
float probe_read_avx512(const float* data, int64_t n);
double probe_fma_avx512(int64_t iterations, double* flops);
double probe_bf16_dot_avx512(int64_t iterations, double* flops);

}  // namespace tessera::kernels
