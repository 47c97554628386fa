// AVX-512 VNNI Q4_1 / Q5_0 / Q5_1 x Q8_0 vec_dots (compiled with the AVX-512 set and
// -ffp-contract=off; see CMakeLists.txt). The bodies are in x86_legacy_quants.h; here 32 byte
// products are summed into 8 int32 lanes by one vpdpbusd (256-bit form, AVX512VL + VNNI).
#include <immintrin.h>

#include "tessera/base/check.h"
#include "tessera/kernels/legacy_quants.h"
#include "x86_legacy_quants.h"

namespace tessera::kernels {
namespace {

struct VnniDot {
  static __m256i u8s8(__m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  }
  static __m256i acc(__m256i c, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(c, u, s); }
};

}  // namespace

namespace avx512 {

float q5_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  return q5_0_vec_dot_body<VnniDot>(static_cast<const BlockQ5_0*>(row),
                                    static_cast<const BlockQ8_0*>(x), n / kQKLegacy);
}
float q4_1_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  return affine_vec_dot_body<VnniDot, BlockQ4_1, false>(
      static_cast<const BlockQ4_1*>(row), static_cast<const BlockQ8_0*>(x), n / kQKLegacy);
}
float q5_1_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  return affine_vec_dot_body<VnniDot, BlockQ5_1, true>(
      static_cast<const BlockQ5_1*>(row), static_cast<const BlockQ8_0*>(x), n / kQKLegacy);
}

void q5_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  dispatch_tile<Tile32<Q5_0Format<VnniDot>>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                               y_stride, n);
}
void q4_1_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  dispatch_tile<Tile32<Q4_1Format<VnniDot>>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                               y_stride, n);
}
void q5_1_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  dispatch_tile<Tile32<Q5_1Format<VnniDot>>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                               y_stride, n);
}

}  // namespace avx512

void install_avx512_legacy_quant_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kQ4_1)].vec_dot = avx512::q4_1_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kQ4_1)].vec_dot_tile = avx512::q4_1_q8_0_vec_dot_tile;
  t.dtypes[dtype_slot(DType::kQ5_0)].vec_dot = avx512::q5_0_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kQ5_0)].vec_dot_tile = avx512::q5_0_q8_0_vec_dot_tile;
  t.dtypes[dtype_slot(DType::kQ5_1)].vec_dot = avx512::q5_1_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kQ5_1)].vec_dot_tile = avx512::q5_1_q8_0_vec_dot_tile;
}

}  // namespace tessera::kernels
