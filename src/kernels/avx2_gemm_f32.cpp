// The AVX2 micro-kernel of gemm_f32.h: a 6 x 16 tile in twelve ymm accumulators, each lane one
// element's chain of FMAs (so it matches the scalar std::fma reference bit for bit).
#include <immintrin.h>

#include "tessera/kernels/gemm_f32.h"

namespace tessera::kernels {
namespace avx2 {

void gemm_f32_micro(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                    bool load_c) {
  constexpr int kMr = 6;
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    acc[i][0] = load_c ? _mm256_loadu_ps(c + i * ldc) : _mm256_setzero_ps();
    acc[i][1] = load_c ? _mm256_loadu_ps(c + i * ldc + 8) : _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * 16);
    const __m256 b1 = _mm256_loadu_ps(b + p * 16 + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + p * kMr + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    _mm256_storeu_ps(c + i * ldc, acc[i][0]);
    _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
  }
}

}  // namespace avx2

GemmF32Kernel avx2_gemm_f32_kernel() {
  GemmF32Kernel k;
  k.fn = avx2::gemm_f32_micro;
  k.mr = 6;
  k.nr = 16;
  k.kc = 384;   // a B sliver of 384 x 16 floats: 24 KiB of L1
  k.mc = 120;   // an A block of 120 x 384 floats: 180 KiB of L2
  k.nc = 1024;
  return k;
}

}  // namespace tessera::kernels
