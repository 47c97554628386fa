#include "tessera/kernels/packed_legacy.h"

#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/legacy_quant_blocks.h"
#include "tessera/kernels/packed_q4_0.h"
#include "tessera/kernels/quant_blocks.h"

namespace tessera::kernels {
namespace {

uint16_t f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return h;
}

template <LegacyX16 F, class Block>
void pack(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nb = n_cols / kQKLegacy;
  for (int64_t g = 0; g < n_groups; ++g) {
    auto* out = static_cast<uint8_t*>(dst) + g * legacy_x16_group_bytes(F, n_cols);
    if constexpr (F.five_bits) std::memset(out, 0, legacy_x16_group_bytes(F, n_cols));
    for (int l = 0; l < 16; ++l) {
      const auto* row = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(src) + (g * 16 + l) * row_bytes);
      for (int64_t b = 0; b < nb; ++b) {
        for (int c = 0; c < 4; ++c) std::memcpy(out + legacy_x16_quants_at(F, b) + c * 64 + l * 4, row[b].qs + 4 * c, 4);
        if constexpr (F.five_bits) {
          uint32_t qh;
          std::memcpy(&qh, row[b].qh, sizeof qh);
          uint8_t* bits = out + legacy_x16_bits_at(F, b, nb);
          for (int e = 0; e < kQKLegacy; ++e) {
            if ((qh >> e & 1) == 0) continue;
            const int mask = e / 4 % 4 + (e >= 16 ? 4 : 0), bit = 4 * l + e % 4;
            bits[mask * 8 + bit / 8] |= static_cast<uint8_t>(1u << (bit % 8));
          }
        }
        uint8_t* sc = out + legacy_x16_scales_at(F, b, nb);
        std::memcpy(sc + 2 * l, &row[b].d, sizeof(uint16_t));
        if constexpr (F.has_min) std::memcpy(sc + 32 + 2 * l, &row[b].m, sizeof(uint16_t));
      }
    }
  }
}

// Level (0..15 or 0..31) of element 4c + j (hi: 16 + 4c + j) of lane l in block b.
template <LegacyX16 F>
int level(const uint8_t* q, int64_t b, int64_t nb, int l, int c, int j, bool hi) {
  const uint8_t byte = q[legacy_x16_quants_at(F, b) + c * 64 + l * 4 + j];
  int v = hi ? byte >> 4 : byte & 0x0f;
  if constexpr (F.five_bits) {
    const int mask = c + (hi ? 4 : 0), bit = 4 * l + j;
    v |= (q[legacy_x16_bits_at(F, b, nb) + mask * 8 + bit / 8] >> (bit % 8) & 1) << 4;
  }
  return v;
}

template <LegacyX16 F>
void row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nb = n_cols / kQKLegacy;
  const auto* q = static_cast<const uint8_t*>(group);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* sc = q + legacy_x16_scales_at(F, b, nb);
    const float d = f16_to_f32(f16_at(sc + 2 * l));
    for (int c = 0; c < 4; ++c) {
      for (int j = 0; j < 4; ++j) {
        for (int hi = 0; hi < 2; ++hi) {
          const int v = level<F>(q, b, nb, l, c, j, hi != 0);
          float& out = dst[b * 32 + 16 * hi + 4 * c + j];
          // As legacy_quants.cpp decodes: d * q + m (product rounded, then the sum); d * (q - 16).
          if constexpr (F.has_min) {
            out = d * static_cast<float>(v) + f16_to_f32(f16_at(sc + 32 + 2 * l));
          } else {
            out = d * static_cast<float>(v - 16);
          }
        }
      }
    }
  }
}

template <LegacyX16 F>
void gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
          const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride, int64_t n) {
  const int64_t nb = n / kQKLegacy;
  const size_t group_bytes = legacy_x16_group_bytes(F, n);
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * group_bytes;
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* a = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < 16; ++l) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          const int32_t* tb = terms + 2 * (t * nb + b);
          int32_t s = F.has_min ? 0 : tb[0];
          for (int c = 0; c < 4; ++c) {
            for (int j = 0; j < 4; ++j) {
              s += level<F>(q, b, nb, l, c, j, false) * a[b].qs[4 * c + j] +
                   level<F>(q, b, nb, l, c, j, true) * a[b].qs[16 + 4 * c + j];
            }
          }
          const uint8_t* sc = q + legacy_x16_scales_at(F, b, nb);
          float dx;
          std::memcpy(&dx, tb + 1, sizeof dx);
          acc = std::fma(f16_to_f32(f16_at(sc + 2 * l)) * dx, static_cast<float>(s), acc);
          if constexpr (F.has_min) {
            acc = std::fma(f16_to_f32(f16_at(sc + 32 + 2 * l)) * dx, static_cast<float>(tb[0]), acc);
          }
        }
        y[t * y_stride + g * 16 + l] = acc;
      }
    }
  }
}

}  // namespace

size_t q4_1x16_group_bytes(int64_t n_cols) { return legacy_x16_group_bytes(kQ4_1x16, n_cols); }
size_t q5_0x16_group_bytes(int64_t n_cols) { return legacy_x16_group_bytes(kQ5_0x16, n_cols); }
size_t q5_1x16_group_bytes(int64_t n_cols) { return legacy_x16_group_bytes(kQ5_1x16, n_cols); }

void pack_q4_1x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  pack<kQ4_1x16, BlockQ4_1>(src, row_bytes, n_groups, n_cols, dst);
}
void pack_q5_0x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  pack<kQ5_0x16, BlockQ5_0>(src, row_bytes, n_groups, n_cols, dst);
}
void pack_q5_1x16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  pack<kQ5_1x16, BlockQ5_1>(src, row_bytes, n_groups, n_cols, dst);
}

void q4_1x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  row_to_float<kQ4_1x16>(group, l, n_cols, dst);
}
void q5_0x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  row_to_float<kQ5_0x16>(group, l, n_cols, dst);
}
void q5_1x16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  row_to_float<kQ5_1x16>(group, l, n_cols, dst);
}

void q8_0_block_terms_sum(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                          int32_t* terms) {
  q8_0_block_terms_offset(x, x_row_bytes, n_tokens, n_cols, -1, terms);
}
void q8_0_block_terms_x16(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                          int32_t* terms) {
  q8_0_block_terms_offset(x, x_row_bytes, n_tokens, n_cols, 16, terms);
}

namespace scalar {

void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  gemm<kQ4_1x16>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}
void q5_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  gemm<kQ5_0x16>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}
void q5_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  gemm<kQ5_1x16>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}

}  // namespace scalar
}  // namespace tessera::kernels
