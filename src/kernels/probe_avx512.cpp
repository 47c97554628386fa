// AVX-512 machine probes. Compiled with -mavx512f.
#include <immintrin.h>

#include "tessera/kernels/probe_simd.h"

namespace tessera::kernels {
namespace {
// Horizontal sum by a store: GCC 12's _mm512_reduce_add_ps trips -Wuninitialized.
float hsum(__m512 v) {
  alignas(64) float out[16];
  _mm512_store_ps(out, v);
  float s = 0.0f;
  for (float x : out) s += x;
  return s;
}
}  // namespace

float probe_read_avx512(const float* data, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(data + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(data + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(data + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(data + i + 48));
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

double probe_fma_avx512(int64_t iterations, double* flops) {
  constexpr int kChains = 12;
  __m512 acc[kChains];
  for (auto& a : acc) a = _mm512_set1_ps(1.0f);
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, c);
  }
  __m512 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm512_add_ps(s, acc[k]);
  *flops = static_cast<double>(iterations) * kChains * 16 * 2;
  return hsum(s);
}

}  // namespace tessera::kernels
