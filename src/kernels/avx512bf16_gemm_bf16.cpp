// The AVX-512 BF16 micro-kernel of gemm_bf16.h: a 12 x 32 tile in twenty-four zmm accumulators;
// one vdpbf16ps per accumulator and pair of k, whose documented arithmetic (the odd product added
// first, then the even one, each an f32 FMA rounded to nearest even with DAZ inputs and FTZ
// output, MXCSR not consulted) is the scalar reference's.
#include <immintrin.h>

#include "tessera/kernels/gemm_bf16.h"

namespace tessera::kernels {
namespace avx512bf16 {

void gemm_bf16_micro(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc,
                     bool load_c) {
  constexpr int kMr = 12;
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    acc[i][0] = load_c ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    acc[i][1] = load_c ? _mm512_loadu_ps(c + i * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t q = 0; q < kp; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + q * 32);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + q * 32 + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[q * kMr + i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

}  // namespace avx512bf16

GemmBf16Kernel avx512bf16_gemm_bf16_kernel() {
  GemmBf16Kernel k;
  k.fn = avx512bf16::gemm_bf16_micro;
  k.name = "avx512_bf16";
  k.mr = 12;
  k.nr = 32;
  k.kp = 256;   // a B sliver of 256 pairs x 32 columns: 32 KiB of the 48 KiB L1
  k.mc = 144;   // an A block of 144 rows x 256 pairs: 144 KiB of L2
  k.nc = 1024;
  return k;
}

}  // namespace tessera::kernels
