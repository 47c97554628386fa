#include "tessera/kernels/packed_q6_k.h"

#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/kquant_blocks.h"

namespace tessera::kernels {
namespace {

constexpr size_t kScalesAt = 3072, kDAt = 3072 + 256;

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Value (0..63) of element e of a GGUF Q6_K block (kquant_blocks.h): quarter q of its half
// takes the low (q < 2) or high nibble of ql[64h + 32 (q % 2) + l] and qh[32h + l] bits 2q, 2q + 1.
int gguf_value(const BlockQ6_K& b, int e) {
  const int h = e / 128, q = (e % 128) / 32, l = e % 32;
  const int lo = b.ql[64 * h + 32 * (q % 2) + l] >> (4 * (q / 2)) & 15;
  const int hi = b.qh[32 * h + l] >> (2 * q) & 3;
  return lo | hi << 4;
}

// Value of element e of lane l in a packed super-block.
int packed_value(const uint8_t* sb, int l, int e) {
  const int j = e / 16, c = (e % 16) / 4, k = e % 4;
  const uint8_t* lane = sb + j * 192 + 4 * l + k;
  if (c < 3) return lane[c * 64] & 0x3f;
  return (lane[0] >> 6) << 4 | (lane[64] >> 6) << 2 | lane[128] >> 6;
}

// Row l's scale of sub-block j.
int scale_of(const uint8_t* sb, int l, int j) {
  return static_cast<int8_t>(sb[kScalesAt + (j / 2) * 32 + 2 * l + j % 2]);
}

}  // namespace

void pack_q6_kx16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nsb = n_cols / kQK_K;
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int l = 0; l < 16; ++l) {
      const auto* row = reinterpret_cast<const BlockQ6_K*>(static_cast<const uint8_t*>(src) + (g * 16 + l) * row_bytes);
      for (int64_t s = 0; s < nsb; ++s) {
        auto* out = static_cast<uint8_t*>(dst) + (g * nsb + s) * kQ6_Kx16SuperBlockBytes;
        for (int j = 0; j < 16; ++j) {
          for (int k = 0; k < 4; ++k) {
            const int last = gguf_value(row[s], 16 * j + 12 + k);
            for (int p = 0; p < 3; ++p) {
              const int top = last >> (4 - 2 * p) & 3;
              out[j * 192 + p * 64 + 4 * l + k] = static_cast<uint8_t>(gguf_value(row[s], 16 * j + 4 * p + k) | top << 6);
            }
          }
          out[kScalesAt + (j / 2) * 32 + 2 * l + j % 2] = static_cast<uint8_t>(row[s].scales[j]);
        }
        std::memcpy(out + kDAt + 2 * l, &row[s].d, 2);
      }
    }
  }
}

void q6_kx16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nsb = n_cols / kQK_K;
  for (int64_t s = 0; s < nsb; ++s) {
    const auto* sb = static_cast<const uint8_t*>(group) + s * kQ6_Kx16SuperBlockBytes;
    const float d = f16_to_f32(load_u16(sb + kDAt + 2 * l));
    for (int e = 0; e < kQK_K; ++e) {  // as q6_k_to_float rounds
      const float step = d * static_cast<float>(scale_of(sb, l, e / 16));
      dst[s * kQK_K + e] = step * static_cast<float>(packed_value(sb, l, e) - 32);
    }
  }
}

namespace scalar {

void q6_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* /*pairs*/, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  const int64_t nsb = n / kQK_K;
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < 16; ++l) {
        float acc = 0.0f;
        for (int64_t s = 0; s < nsb; ++s) {
          const auto* sb = static_cast<const uint8_t*>(groups) + (g * nsb + s) * kQ6_Kx16SuperBlockBytes;
          int32_t sumi = 0, summ = 0;
          for (int j = 0; j < 16; ++j) {
            int32_t dot = 0;
            for (int i = 0; i < 16; ++i) dot += packed_value(sb, l, 16 * j + i) * a[s].qs[16 * j + i];
            const int32_t sc = scale_of(sb, l, j);
            sumi += sc * dot;
            summ += sc * a[s].bsums[j];
          }
          const int32_t isum = sumi - 32 * summ;
          const float d = f16_to_f32(load_u16(sb + kDAt + 2 * l));
          acc = std::fma(d * a[s].d, static_cast<float>(isum), acc);
        }
        y[t * y_stride + g * 16 + l] = acc;
      }
    }
  }
}

}  // namespace scalar
}  // namespace tessera::kernels
