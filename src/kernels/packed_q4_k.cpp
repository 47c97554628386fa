#include "tessera/kernels/packed_q4_k.h"

#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/kquant_blocks.h"
#include "tessera/kernels/kquants.h"

namespace tessera::kernels {
namespace {

constexpr size_t kScalesAt = 2048, kMinsAt = 2048 + 128, kDAt = 2048 + 256, kDminAt = 2048 + 288;

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

void pack_q4_kx16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nsb = n_cols / kQK_K;
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int l = 0; l < kQ4_Kx16Rows; ++l) {
      const auto* row = reinterpret_cast<const BlockQ4_K*>(static_cast<const uint8_t*>(src) +
                                                           (g * kQ4_Kx16Rows + l) * row_bytes);
      for (int64_t s = 0; s < nsb; ++s) {
        auto* out = static_cast<uint8_t*>(dst) + (g * nsb + s) * kQ4_Kx16SuperBlockBytes;
        for (int k = 0; k < 4; ++k) {
          for (int c = 0; c < 8; ++c) std::memcpy(out + k * 512 + c * 64 + l * 4, row[s].qs + 32 * k + 4 * c, 4);
        }
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, m;
          unpack_scale_min(row[s].scales, j, &sc, &m);
          out[kScalesAt + j * 16 + l] = sc;
          out[kMinsAt + (j / 2) * 32 + 2 * l + (j % 2)] = m;
        }
        std::memcpy(out + kDAt + 2 * l, &row[s].d, 2);
        std::memcpy(out + kDminAt + 2 * l, &row[s].dmin, 2);
      }
    }
  }
}

void q4_kx16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nsb = n_cols / kQK_K;
  for (int64_t s = 0; s < nsb; ++s) {
    const auto* sb = static_cast<const uint8_t*>(group) + s * kQ4_Kx16SuperBlockBytes;
    const float d = f16_to_f32(load_u16(sb + kDAt + 2 * l));
    const float dmin = f16_to_f32(load_u16(sb + kDminAt + 2 * l));
    float* out = dst + s * kQK_K;
    for (int k = 0; k < 4; ++k) {
      const float d_lo = d * sb[kScalesAt + (2 * k) * 16 + l];
      const float d_hi = d * sb[kScalesAt + (2 * k + 1) * 16 + l];
      const float m_lo = dmin * sb[kMinsAt + k * 32 + 2 * l];
      const float m_hi = dmin * sb[kMinsAt + k * 32 + 2 * l + 1];
      for (int c = 0; c < 8; ++c) {
        for (int j = 0; j < 4; ++j) {
          const uint8_t byte = sb[k * 512 + c * 64 + l * 4 + j];
          out[64 * k + 4 * c + j] = d_lo * static_cast<float>(byte & 0x0f) - m_lo;
          out[64 * k + 32 + 4 * c + j] = d_hi * static_cast<float>(byte >> 4) - m_hi;
        }
      }
    }
  }
}

void q8_k_min_pairs(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                    int32_t* pairs) {
  const int64_t nsb = n_cols / kQK_K;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
    for (int64_t s = 0; s < nsb; ++s) {
      for (int p = 0; p < 4; ++p) {
        const int32_t lo = a[s].bsums[4 * p] + a[s].bsums[4 * p + 1];
        const int32_t hi = a[s].bsums[4 * p + 2] + a[s].bsums[4 * p + 3];
        pairs[(t * nsb + s) * 4 + p] =
            static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                                 (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
      }
    }
  }
}

namespace scalar {

void q4_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  (void)pairs;  // the reference sums the bsums itself
  const int64_t nsb = n / kQK_K;
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* grp = static_cast<const uint8_t*>(groups) + g * q4_kx16_group_bytes(n);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < kQ4_Kx16Rows; ++l) {
        float acc = 0.0f;
        for (int64_t s = 0; s < nsb; ++s) {
          const uint8_t* sb = grp + s * kQ4_Kx16SuperBlockBytes;
          int32_t sumi = 0, summ = 0;
          for (int k = 0; k < 4; ++k) {
            int32_t dot_lo = 0, dot_hi = 0;
            for (int c = 0; c < 8; ++c) {
              for (int j = 0; j < 4; ++j) {
                const uint8_t byte = sb[k * 512 + c * 64 + l * 4 + j];
                dot_lo += (byte & 0x0f) * a[s].qs[64 * k + 4 * c + j];
                dot_hi += (byte >> 4) * a[s].qs[64 * k + 32 + 4 * c + j];
              }
            }
            sumi += sb[kScalesAt + (2 * k) * 16 + l] * dot_lo + sb[kScalesAt + (2 * k + 1) * 16 + l] * dot_hi;
            summ += sb[kMinsAt + k * 32 + 2 * l] * (a[s].bsums[4 * k] + a[s].bsums[4 * k + 1]) +
                    sb[kMinsAt + k * 32 + 2 * l + 1] * (a[s].bsums[4 * k + 2] + a[s].bsums[4 * k + 3]);
          }
          const float dd = f16_to_f32(load_u16(sb + kDAt + 2 * l)) * a[s].d;
          const float dm = f16_to_f32(load_u16(sb + kDminAt + 2 * l)) * a[s].d;
          acc = std::fma(dd, static_cast<float>(sumi), acc);
          acc = std::fma(-dm, static_cast<float>(summ), acc);
        }
        y[t * y_stride + g * kQ4_Kx16Rows + l] = acc;
      }
    }
  }
}

}  // namespace scalar
}  // namespace tessera::kernels
