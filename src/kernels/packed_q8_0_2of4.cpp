#include "tessera/kernels/packed_q8_0_2of4.h"

#include <cmath>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/sparse_blocks.h"

namespace tessera::kernels {

void pack_q8_0_2of4x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nb = n_cols / kQK2of4;
  for (int64_t g = 0; g < n_groups; ++g) {
    auto* out = static_cast<uint8_t*>(dst) + g * q8_0_2of4x16_group_bytes(n_cols);
    for (int l = 0; l < 16; ++l) {
      const auto* row = reinterpret_cast<const BlockQ8_0_2of4*>(static_cast<const uint8_t*>(src) + (g * 16 + l) * row_bytes);
      for (int64_t b = 0; b < nb; ++b) {
        const uint32_t mask = load_mask32(row[b].mask);
        TS_CHECK(mask_is_2of4(mask, 8));
        uint8_t* quants = out + q8_0_2of4x16_quants_at(b);
        uint8_t* codes = out + q8_0_2of4x16_codes_at(b, nb) + 4 * l;
        std::memset(codes, 0, 4);
        int k = 0;  // kept value index, position order
        for (int p = 0; p < kQK2of4; ++p) {
          if (((mask >> p) & 1) == 0) continue;
          const int c = k / 4, j = k % 4;
          quants[c * 64 + l * 4 + j] = static_cast<uint8_t>(row[b].qs[k]) ^ 0x80;
          codes[c] = static_cast<uint8_t>(codes[c] | (p % 4) << (2 * j));
          ++k;
        }
        std::memcpy(out + q8_0_2of4x16_scales_at(b, nb) + 2 * l, &row[b].d, sizeof(uint16_t));
      }
    }
  }
}

void q8_0_2of4x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nb = n_cols / kQK2of4;
  const auto* q = static_cast<const uint8_t*>(group);
  for (int64_t b = 0; b < nb; ++b) {
    uint16_t h;
    std::memcpy(&h, q + q8_0_2of4x16_scales_at(b, nb) + 2 * l, sizeof h);
    const float d = f16_to_f32(h);
    float* out = dst + b * kQK2of4;
    for (int i = 0; i < kQK2of4; ++i) out[i] = 0.0f;
    for (int c = 0; c < 4; ++c) {
      const uint8_t code = q[q8_0_2of4x16_codes_at(b, nb) + 4 * l + c];
      for (int j = 0; j < 4; ++j) {
        const auto v = static_cast<int8_t>(q[q8_0_2of4x16_quants_at(b) + c * 64 + l * 4 + j] ^ 0x80);
        out[8 * c + 4 * (j / 2) + ((code >> (2 * j)) & 3)] = static_cast<float>(v) * d;
      }
    }
  }
}

namespace scalar {

void q8_0_2of4x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x,
                            size_t x_row_bytes, const int32_t* terms, int64_t n_tokens, float* y,
                            int64_t y_stride, int64_t n) {
  const int64_t nb = n / kQK2of4;
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * q8_0_2of4x16_group_bytes(n);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* a = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < 16; ++l) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          int32_t dot = 0, sum_a = 0;
          for (int c = 0; c < 4; ++c) {
            const uint8_t code = q[q8_0_2of4x16_codes_at(b, nb) + 4 * l + c];
            for (int j = 0; j < 4; ++j) {
              const int32_t ax = a[b].qs[8 * c + 4 * (j / 2) + ((code >> (2 * j)) & 3)];
              dot += q[q8_0_2of4x16_quants_at(b) + c * 64 + l * 4 + j] * ax;
              sum_a += ax;
            }
          }
          dot -= 128 * sum_a;
          uint16_t h;
          std::memcpy(&h, q + q8_0_2of4x16_scales_at(b, nb) + 2 * l, sizeof h);
          float da;
          std::memcpy(&da, &terms[2 * (t * nb + b) + 1], sizeof da);
          acc = std::fma(f16_to_f32(h) * da, static_cast<float>(dot), acc);
        }
        y[t * y_stride + g * 16 + l] = acc;
      }
    }
  }
}

}  // namespace scalar
}  // namespace tessera::kernels
