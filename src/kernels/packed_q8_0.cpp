#include "tessera/kernels/packed_q8_0.h"

#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/packed_q4_0.h"
#include "tessera/kernels/quant_blocks.h"

namespace tessera::kernels {

void pack_q8_0x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nb = n_cols / kQK8_0;
  for (int64_t g = 0; g < n_groups; ++g) {
    auto* out = static_cast<uint8_t*>(dst) + g * q8_0x16_group_bytes(n_cols);
    for (int l = 0; l < 16; ++l) {
      const auto* row = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(src) + (g * 16 + l) * row_bytes);
      for (int64_t b = 0; b < nb; ++b) {
        for (int c = 0; c < 8; ++c) {
          for (int j = 0; j < 4; ++j) {
            out[q8_0x16_quants_at(b) + c * 64 + l * 4 + j] = static_cast<uint8_t>(row[b].qs[4 * c + j]) ^ 0x80;
          }
        }
        std::memcpy(out + q8_0x16_scales_at(b, nb) + 2 * l, &row[b].d, sizeof(uint16_t));
      }
    }
  }
}

void q8_0x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nb = n_cols / kQK8_0;
  const auto* q = static_cast<const uint8_t*>(group);
  for (int64_t b = 0; b < nb; ++b) {
    uint16_t h;
    std::memcpy(&h, q + q8_0x16_scales_at(b, nb) + 2 * l, sizeof h);
    const float d = f16_to_f32(h);
    for (int c = 0; c < 8; ++c) {
      for (int j = 0; j < 4; ++j) {
        const auto v = static_cast<int8_t>(q[q8_0x16_quants_at(b) + c * 64 + l * 4 + j] ^ 0x80);
        dst[b * 32 + 4 * c + j] = static_cast<float>(v) * d;
      }
    }
  }
}

void q8_0_block_terms_x128(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                           int32_t* terms) {
  q8_0_block_terms_offset(x, x_row_bytes, n_tokens, n_cols, 128, terms);
}

namespace scalar {

void q8_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  const int64_t nb = n / kQK8_0;
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * q8_0x16_group_bytes(n);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* a = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < 16; ++l) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          int32_t dot = terms[2 * (t * nb + b)];
          for (int c = 0; c < 8; ++c) {
            for (int j = 0; j < 4; ++j) dot += q[q8_0x16_quants_at(b) + c * 64 + l * 4 + j] * a[b].qs[4 * c + j];
          }
          uint16_t h;
          std::memcpy(&h, q + q8_0x16_scales_at(b, nb) + 2 * l, sizeof h);
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
