// The AVX-512 micro-kernel of gemm_f32.h: a 12 x 32 tile in twenty-four zmm accumulators, each
// lane one element's chain of FMAs (so it matches the scalar std::fma reference bit for bit).
#include <immintrin.h>

#include "tessera/kernels/gemm_f32.h"

namespace tessera::kernels {
namespace avx512 {

void gemm_f32_micro(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                    bool load_c) {
  constexpr int kMr = 12;
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    acc[i][0] = load_c ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    acc[i][1] = load_c ? _mm512_loadu_ps(c + i * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b + p * 32);
    const __m512 b1 = _mm512_loadu_ps(b + p * 32 + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const __m512 ai = _mm512_set1_ps(a[p * kMr + i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

}  // namespace avx512

GemmF32Kernel avx512_gemm_f32_kernel() {
  GemmF32Kernel k;
  k.fn = avx512::gemm_f32_micro;
  k.mr = 12;
  k.nr = 32;
  k.kc = 256;   // a B sliver of 256 x 32 floats: 32 KiB of the 48 KiB L1
  k.mc = 144;   // an A block of 144 x 256 floats: 144 KiB of L2
  k.nc = 1024;
  return k;
}

}  // namespace tessera::kernels
