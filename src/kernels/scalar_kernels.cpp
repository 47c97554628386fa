#include "tessera/kernels/scalar_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/quant_blocks.h"

namespace tessera::kernels::scalar {

void f32_to_float(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void f32_from_float(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
float f32_dot(const void* row, const float* x, int64_t n) {
  const float* w = static_cast<const float*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += w[i] * x[i];
  return sum;
}

void f16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
}
float f16_dot(const void* row, const float* x, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += f16_to_f32(h[i]) * x[i];
  return sum;
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}
void bf16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}
float bf16_dot(const void* row, const float* x, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += bf16_to_f32(h[i]) * x[i];
  return sum;
}

void q8_0_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK8_0; ++j) dst[i * kQK8_0 + j] = d * static_cast<float>(b[i].qs[j]);
  }
}
void q8_0_from_float(const float* src, void* dst, int64_t n) {
  BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float* x = src + i * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK8_0; ++j) b[i].qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
  }
}
float q8_0_dot(const void* row, const float* x, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    float block = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) block += static_cast<float>(b[i].qs[j]) * x[i * kQK8_0 + j];
    sum += f16_to_f32(b[i].d) * block;
  }
  return sum;
}

void q4_0_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      dst[i * kQK4_0 + j] = d * static_cast<float>((b[i].qs[j] & 0x0f) - 8);
      dst[i * kQK4_0 + j + kQK4_0 / 2] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}
void q4_0_from_float(const float* src, void* dst, int64_t n) {
  BlockQ4_0* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float* x = src + i * kQK4_0;
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(x[j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(x[j + kQK4_0 / 2] * id + 8.5f));
      b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}
float q4_0_dot(const void* row, const float* x, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float* xb = x + i * kQK4_0;
    float block = 0.0f;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      block += static_cast<float>((b[i].qs[j] & 0x0f) - 8) * xb[j];
      block += static_cast<float>((b[i].qs[j] >> 4) - 8) * xb[j + kQK4_0 / 2];
    }
    sum += f16_to_f32(b[i].d) * block;
  }
  return sum;
}

float f32_vec_dot(const void* row, const void* x, int64_t n) {
  return f32_dot(row, static_cast<const float*>(x), n);
}
float f16_vec_dot(const void* row, const void* x, int64_t n) {
  return f16_dot(row, static_cast<const float*>(x), n);
}
float bf16_vec_dot(const void* row, const void* x, int64_t n) {
  return bf16_dot(row, static_cast<const float*>(x), n);
}

float q8_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  const BlockQ8_0* w = static_cast<const BlockQ8_0*>(row);
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    int32_t acc = 0;
    for (int j = 0; j < kQK8_0; ++j) acc += static_cast<int32_t>(w[i].qs[j]) * a[i].qs[j];
    sum += f16_to_f32(w[i].d) * f16_to_f32(a[i].d) * static_cast<float>(acc);
  }
  return sum;
}

float q4_0_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  const BlockQ4_0* w = static_cast<const BlockQ4_0*>(row);
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    int32_t acc = 0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      acc += ((w[i].qs[j] & 0x0f) - 8) * a[i].qs[j];
      acc += ((w[i].qs[j] >> 4) - 8) * a[i].qs[j + kQK4_0 / 2];
    }
    sum += f16_to_f32(w[i].d) * f16_to_f32(a[i].d) * static_cast<float>(acc);
  }
  return sum;
}

void q4_0_q8_0_vec_dot_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  const auto* wb = static_cast<const std::byte*>(w);
  const auto* xb = static_cast<const std::byte*>(x);
  for (int t = 0; t < n_tokens; ++t) {
    for (int r = 0; r < n_rows; ++r) {
      y[t * y_stride + r] = q4_0_q8_0_vec_dot(wb + r * w_row_bytes, xb + t * x_row_bytes, n);
    }
  }
}

void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float p = a * x[i];  // no contraction (-ffp-contract=off): the SIMD rows' bits
    y[i] += p;
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace tessera::kernels::scalar
