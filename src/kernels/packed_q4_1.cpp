#include "tessera/kernels/packed_q4_1.h"

#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/legacy_quant_blocks.h"
#include "tessera/kernels/packed_q4_0.h"
#include "tessera/kernels/quant_blocks.h"

namespace tessera::kernels {

void pack_q4_1x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nb = n_cols / kQKLegacy;
  for (int64_t g = 0; g < n_groups; ++g) {
    auto* out = static_cast<uint8_t*>(dst) + g * q4_1x16_group_bytes(n_cols);
    for (int l = 0; l < 16; ++l) {
      const auto* row = reinterpret_cast<const BlockQ4_1*>(static_cast<const uint8_t*>(src) +
                                                           (g * 16 + l) * row_bytes);
      for (int64_t b = 0; b < nb; ++b) {
        for (int c = 0; c < 4; ++c) std::memcpy(out + q4_1x16_quants_at(b) + c * 64 + l * 4, row[b].qs + 4 * c, 4);
        std::memcpy(out + q4_1x16_scales_at(b, nb) + 2 * l, &row[b].d, sizeof(uint16_t));
        std::memcpy(out + q4_1x16_scales_at(b, nb) + 32 + 2 * l, &row[b].m, sizeof(uint16_t));
      }
    }
  }
}

void q4_1x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nb = n_cols / kQKLegacy;
  const auto* q = static_cast<const uint8_t*>(group);
  for (int64_t b = 0; b < nb; ++b) {
    uint16_t hd, hm;
    std::memcpy(&hd, q + q4_1x16_scales_at(b, nb) + 2 * l, sizeof hd);
    std::memcpy(&hm, q + q4_1x16_scales_at(b, nb) + 32 + 2 * l, sizeof hm);
    const float d = f16_to_f32(hd), m = f16_to_f32(hm);
    for (int c = 0; c < 4; ++c) {
      for (int j = 0; j < 4; ++j) {
        const uint8_t byte = q[q4_1x16_quants_at(b) + c * 64 + l * 4 + j];
        dst[b * 32 + 4 * c + j] = d * static_cast<float>(byte & 0x0f) + m;
        dst[b * 32 + 16 + 4 * c + j] = d * static_cast<float>(byte >> 4) + m;
      }
    }
  }
}

void q8_0_block_terms_sum(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                          int32_t* terms) {
  q8_0_block_terms_offset(x, x_row_bytes, n_tokens, n_cols, -1, terms);
}

namespace scalar {

void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  const int64_t nb = n / kQKLegacy;
  const size_t group_bytes = q4_1x16_group_bytes(n);
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * group_bytes;
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* a =
          reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < 16; ++l) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          int32_t s = 0;
          for (int c = 0; c < 4; ++c) {
            for (int j = 0; j < 4; ++j) {
              const uint8_t byte = q[q4_1x16_quants_at(b) + c * 64 + l * 4 + j];
              s += (byte & 0x0f) * a[b].qs[4 * c + j] + (byte >> 4) * a[b].qs[16 + 4 * c + j];
            }
          }
          uint16_t hd, hm;
          std::memcpy(&hd, q + q4_1x16_scales_at(b, nb) + 2 * l, sizeof hd);
          std::memcpy(&hm, q + q4_1x16_scales_at(b, nb) + 32 + 2 * l, sizeof hm);
          float dx;
          std::memcpy(&dx, &terms[2 * (t * nb + b) + 1], sizeof dx);
          acc = std::fma(f16_to_f32(hd) * dx, static_cast<float>(s), acc);
          acc = std::fma(f16_to_f32(hm) * dx, static_cast<float>(terms[2 * (t * nb + b)]), acc);
        }
        y[t * y_stride + g * 16 + l] = acc;
      }
    }
  }
}

}  // namespace scalar
}  // namespace tessera::kernels
