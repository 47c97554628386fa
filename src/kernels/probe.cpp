#include "tessera/kernels/probe.h"

#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/probe_simd.h"

namespace tessera::kernels {
namespace {

bool has_avx2() { return cpu_features().avx2 && cpu_features().fma; }
bool has_avx512() { return cpu_features().avx512f; }

float probe_read_scalar(const float* data, int64_t n) {
  float acc[8] = {};
  for (int64_t i = 0; i < n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += data[i + j];
  }
  float s = 0.0f;
  for (float a : acc) s += a;
  return s;
}

FmaProbe probe_fma_scalar(int64_t iterations) {
  double a[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const double m = 0.999999, c = 1e-7;
  for (int64_t i = 0; i < iterations; ++i) {
    for (auto& x : a) x = x * m + c;
  }
  double s = 0.0;
  for (double x : a) s += x;
  return {s, 16.0 * static_cast<double>(iterations), "scalar"};
}

}  // namespace

float probe_read(const float* data, int64_t n) {
  if (has_avx512()) return probe_read_avx512(data, n);
  if (has_avx2()) return probe_read_avx2(data, n);
  return probe_read_scalar(data, n);
}

FmaProbe probe_fma(int64_t iterations) {
  if (has_avx512()) {
    double flops = 0;
    const double r = probe_fma_avx512(iterations, &flops);
    return {r, flops, "avx512"};
  }
  if (has_avx2()) {
    double flops = 0;
    const double r = probe_fma_avx2(iterations, &flops);
    return {r, flops, "avx2"};
  }
  return probe_fma_scalar(iterations);
}

FmaProbe probe_bf16_dot(int64_t iterations) {
  if (!cpu_features().has_avx512_set() || !cpu_features().avx512_bf16) return {0.0, 0.0, "none"};
  double flops = 0;
  const double r = probe_bf16_dot_avx512(iterations, &flops);
  return {r, flops, "avx512_bf16"};
}

}  // namespace tessera::kernels
