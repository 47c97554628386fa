// The AVX-512 BF16 peak probe (probe.h): independent vdpbf16ps chains in registers. Compiled with
// -mavx512bf16; called only where cpu_features() reports avx512_bf16.
#include <immintrin.h>

#include "tessera/kernels/probe_simd.h"

namespace tessera::kernels {

double probe_bf16_dot_avx512(int64_t iterations, double* flops) {
  constexpr int kChains = 12;  // as the FMA probe: enough independent chains to cover latency
  __m512 acc[kChains];
  for (auto& a : acc) a = _mm512_set1_ps(1.0f);
  // Pairs of bf16 1/1024 (0x3a80): each step adds 2^-19 to every lane, far from overflow.
  const __m512bh m = (__m512bh)_mm512_set1_epi32(0x3a803a80);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_dpbf16_ps(acc[k], m, m);
  }
  __m512 s = acc[0];
  for (int k = 1; k < kChains; ++k) s = _mm512_add_ps(s, acc[k]);
  // One vdpbf16ps per lane: two products and two adds.
  *flops = static_cast<double>(iterations) * kChains * 16 * 4;
  alignas(64) float out[16];
  _mm512_store_ps(out, s);
  float r = 0.0f;
  for (float x : out) r += x;
  return r;
}

}  // namespace tessera::kernels
