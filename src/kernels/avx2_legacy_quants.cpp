// AVX2 Q4_1 / Q5_0 / Q5_1 x Q8_0 vec_dots (compiled with -mavx2 -mfma -mf16c -ffp-contract=off;
// see CMakeLists.txt). The bodies are in x86_legacy_quants.h; here 32 byte products are summed by
// maddubs (|pair sum| <= 2 * 31 * 128, no int16 saturation) and madd into 8 int32 lanes.
#include <immintrin.h>

#include "tessera/base/check.h"
#include "tessera/kernels/legacy_quants.h"
#include "x86_legacy_quants.h"

namespace tessera::kernels {
namespace {

struct Avx2Dot {
  static __m256i u8s8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
  static __m256i acc(__m256i c, __m256i u, __m256i s) { return _mm256_add_epi32(c, u8s8(u, s)); }
};

}  // namespace

namespace avx2 {

float q5_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  return q5_0_vec_dot_body<Avx2Dot>(static_cast<const BlockQ5_0*>(row),
                                    static_cast<const BlockQ8_0*>(x), n / kQKLegacy);
}
float q4_1_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  return affine_vec_dot_body<Avx2Dot, BlockQ4_1, false>(
      static_cast<const BlockQ4_1*>(row), static_cast<const BlockQ8_0*>(x), n / kQKLegacy);
}
float q5_1_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  return affine_vec_dot_body<Avx2Dot, BlockQ5_1, true>(
      static_cast<const BlockQ5_1*>(row), static_cast<const BlockQ8_0*>(x), n / kQKLegacy);
}

void q5_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  dispatch_tile<Tile32<Q5_0Format<Avx2Dot>>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                               y_stride, n);
}
void q4_1_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  dispatch_tile<Tile32<Q4_1Format<Avx2Dot>>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                               y_stride, n);
}
void q5_1_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  TS_CHECK(n % kQKLegacy == 0);
  dispatch_tile<Tile32<Q5_1Format<Avx2Dot>>>(w, w_row_bytes, n_rows, x, x_row_bytes, n_tokens, y,
                               y_stride, n);
}

}  // namespace avx2

void install_avx2_legacy_quant_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kQ4_1)].vec_dot = avx2::q4_1_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kQ4_1)].vec_dot_tile = avx2::q4_1_q8_0_vec_dot_tile;
  t.dtypes[dtype_slot(DType::kQ5_0)].vec_dot = avx2::q5_0_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kQ5_0)].vec_dot_tile = avx2::q5_0_q8_0_vec_dot_tile;
  t.dtypes[dtype_slot(DType::kQ5_1)].vec_dot = avx2::q5_1_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kQ5_1)].vec_dot_tile = avx2::q5_1_q8_0_vec_dot_tile;
}

}  // namespace tessera::kernels
