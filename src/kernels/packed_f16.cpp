#include "tessera/kernels/packed_f16.h"

#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"

namespace tessera::kernels {

void pack_f16x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  for (int64_t g = 0; g < n_groups; ++g) {
    auto* out = static_cast<uint16_t*>(dst) + g * n_cols * 16;
    for (int l = 0; l < 16; ++l) {
      const auto* row = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(src) + (g * 16 + l) * row_bytes);
      for (int64_t k = 0; k < n_cols; ++k) std::memcpy(&out[k * 16 + l], &row[k], sizeof(uint16_t));
    }
  }
}

void f16x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const auto* q = static_cast<const uint8_t*>(group);
  for (int64_t k = 0; k < n_cols; ++k) {
    uint16_t h;
    std::memcpy(&h, q + (k * 16 + l) * 2, sizeof h);
    dst[k] = f16_to_f32(h);
  }
}

namespace scalar {

void f16x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                     const int32_t* /*terms*/, int64_t n_tokens, float* y, int64_t y_stride,
                     int64_t n) {
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * f16x16_group_bytes(n);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* xt = reinterpret_cast<const float*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < 16; ++l) {
        float a[2] = {0.0f, 0.0f};
        for (int64_t k = 0; k < n; ++k) {
          uint16_t h;
          std::memcpy(&h, q + (k * 16 + l) * 2, sizeof h);
          a[k % 2] = std::fma(f16_to_f32(h), xt[k], a[k % 2]);
        }
        y[t * y_stride + g * 16 + l] = a[0] + a[1];
      }
    }
  }
}

}  // namespace scalar
}  // namespace tessera::kernels
