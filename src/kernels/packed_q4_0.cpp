#include "tessera/kernels/packed_q4_0.h"

#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/iquant_blocks.h"
#include "tessera/kernels/quant_blocks.h"

namespace tessera::kernels {

void pack_q4_0x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nb = n_cols / kQK4_0;
  const size_t group_bytes = q4_0x16_group_bytes(n_cols);
  for (int64_t g = 0; g < n_groups; ++g) {
    auto* out = static_cast<uint8_t*>(dst) + g * group_bytes;
    for (int l = 0; l < kQ4_0x16Rows; ++l) {
      const auto* row = reinterpret_cast<const BlockQ4_0*>(static_cast<const uint8_t*>(src) +
                                                           (g * kQ4_0x16Rows + l) * row_bytes);
      for (int64_t b = 0; b < nb; ++b) {
        for (int c = 0; c < 4; ++c) std::memcpy(out + q4_0x16_quants_at(b) + c * 64 + l * 4, row[b].qs + 4 * c, 4);
        std::memcpy(out + q4_0x16_scales_at(b, nb) + 2 * l, &row[b].d, sizeof(uint16_t));
      }
    }
  }
}

namespace {

int q4_0_level(int nibble) { return nibble - 8; }
int iq4_nl_level(int nibble) { return kIQ4Levels[nibble]; }

// Row l of a packed group, each nibble mapped by `level`.
template <int (*level)(int)>
void row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nb = n_cols / kQK4_0;
  const auto* q = static_cast<const uint8_t*>(group);
  for (int64_t b = 0; b < nb; ++b) {
    uint16_t h;
    std::memcpy(&h, q + q4_0x16_scales_at(b, nb) + 2 * l, sizeof h);
    const float d = f16_to_f32(h);
    for (int c = 0; c < 4; ++c) {
      for (int j = 0; j < 4; ++j) {
        const uint8_t byte = q[q4_0x16_quants_at(b) + c * 64 + l * 4 + j];
        dst[b * 32 + 4 * c + j] = static_cast<float>(level(byte & 0x0f)) * d;
        dst[b * 32 + 16 + 4 * c + j] = static_cast<float>(level(byte >> 4)) * d;
      }
    }
  }
}

// The group kernels' reference: each nibble's unsigned stand-in (level + offset) times the
// activation, summed exactly from the token's -offset * sum(a) term.
template <int (*level)(int), int kOffset>
void gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
          const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride, int64_t n) {
  const int64_t nb = n / kQK4_0;
  const size_t group_bytes = q4_0x16_group_bytes(n);
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * group_bytes;
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* a =
          reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < kQ4_0x16Rows; ++l) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          int32_t dot = terms[2 * (t * nb + b)];
          for (int c = 0; c < 4; ++c) {
            for (int j = 0; j < 4; ++j) {
              const uint8_t byte = q[q4_0x16_quants_at(b) + c * 64 + l * 4 + j];
              dot += (level(byte & 0x0f) + kOffset) * a[b].qs[4 * c + j] +
                     (level(byte >> 4) + kOffset) * a[b].qs[16 + 4 * c + j];
            }
          }
          uint16_t h;
          std::memcpy(&h, q + q4_0x16_scales_at(b, nb) + 2 * l, sizeof h);
          const float d = f16_to_f32(h) * f16_to_f32(a[b].d);
          acc = std::fma(d, static_cast<float>(dot), acc);
        }
        y[t * y_stride + g * kQ4_0x16Rows + l] = acc;
      }
    }
  }
}

}  // namespace

void q4_0x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  row_to_float<q4_0_level>(group, l, n_cols, dst);
}

void iq4_nlx16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  row_to_float<iq4_nl_level>(group, l, n_cols, dst);
}

void q8_0_block_terms(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                      int32_t* terms) {
  q8_0_block_terms_offset(x, x_row_bytes, n_tokens, n_cols, 8, terms);
}

void q8_0_block_terms_offset(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                             int32_t offset, int32_t* terms) {
  const int64_t nb = n_cols / kQK8_0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* a = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
    for (int64_t b = 0; b < nb; ++b) {
      int32_t s = 0;
      for (int j = 0; j < kQK8_0; ++j) s += a[b].qs[j];
      terms[2 * (t * nb + b)] = -offset * s;
      const float d = f16_to_f32(a[b].d);
      std::memcpy(&terms[2 * (t * nb + b) + 1], &d, sizeof d);
    }
  }
}

namespace scalar {

void q4_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  gemm<q4_0_level, 8>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}

void iq4_nlx16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                         const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                         int64_t n) {
  gemm<iq4_nl_level, 128>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}

}  // namespace scalar
}  // namespace tessera::kernels
