#include "tessera/kernels/packed_f16_2of4.h"

#include <cmath>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/sparse_blocks.h"

namespace tessera::kernels {
namespace {

uint16_t value_at(const uint8_t* block, int l, int k) {
  uint16_t h;
  std::memcpy(&h, block + k * 32 + 2 * l, sizeof h);
  return h;
}

// Weight index within the block of row l's kept value k.
int weight_of(const uint8_t* block, int l, int k) {
  uint32_t codes;
  std::memcpy(&codes, block + 512 + 4 * l, sizeof codes);
  return 4 * (k / 2) + static_cast<int>(codes >> (2 * k) & 3);
}

}  // namespace

void pack_f16_2of4x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nb = n_cols / kQK2of4;
  for (int64_t g = 0; g < n_groups; ++g) {
    auto* out = static_cast<uint8_t*>(dst) + g * f16_2of4x16_group_bytes(n_cols);
    for (int l = 0; l < 16; ++l) {
      const auto* row = reinterpret_cast<const BlockF16_2of4*>(static_cast<const uint8_t*>(src) + (g * 16 + l) * row_bytes);
      for (int64_t b = 0; b < nb; ++b) {
        const uint32_t mask = load_mask32(row[b].mask);
        TS_CHECK(mask_is_2of4(mask, 8));
        uint8_t* block = out + b * kF16_2of4x16BlockBytes;
        uint32_t codes = 0;
        int k = 0;  // kept value index, position order
        for (int p = 0; p < kQK2of4; ++p) {
          if (((mask >> p) & 1) == 0) continue;
          std::memcpy(block + k * 32 + 2 * l, &row[b].v[k], sizeof(uint16_t));
          codes |= static_cast<uint32_t>(p % 4) << (2 * k);
          ++k;
        }
        std::memcpy(block + 512 + 4 * l, &codes, sizeof codes);
      }
    }
  }
}

void f16_2of4x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nb = n_cols / kQK2of4;
  for (int64_t b = 0; b < nb; ++b) {
    const auto* block = static_cast<const uint8_t*>(group) + b * kF16_2of4x16BlockBytes;
    float* out = dst + b * kQK2of4;
    for (int i = 0; i < kQK2of4; ++i) out[i] = 0.0f;
    for (int k = 0; k < 16; ++k) out[weight_of(block, l, k)] = f16_to_f32(value_at(block, l, k));
  }
}

namespace scalar {

void f16_2of4x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                          const int32_t* /*terms*/, int64_t n_tokens, float* y, int64_t y_stride,
                          int64_t n) {
  const int64_t nb = n / kQK2of4;
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * f16_2of4x16_group_bytes(n);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* xt = reinterpret_cast<const float*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < 16; ++l) {
        float acc[2] = {0.0f, 0.0f};
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t* block = q + b * kF16_2of4x16BlockBytes;
          for (int k = 0; k < 16; ++k) {
            acc[k % 2] = std::fma(f16_to_f32(value_at(block, l, k)), xt[b * kQK2of4 + weight_of(block, l, k)], acc[k % 2]);
          }
        }
        y[t * y_stride + g * 16 + l] = acc[0] + acc[1];
      }
    }
  }
}

}  // namespace scalar
}  // namespace tessera::kernels
