#include "tessera/kernels/packed_q2_k.h"

#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/kquant_blocks.h"
#include "tessera/kernels/kquant_low_blocks.h"

namespace tessera::kernels {
namespace {

constexpr size_t kScalesAt = 1024, kDAt = 1024 + 256, kDminAt = 1024 + 288;

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Level (0..3) of element e of a GGUF Q2_K block (kquant_low_blocks.h).
int gguf_level(const BlockQ2_K& b, int e) {
  return b.qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4)) & 3;
}

// Level of element e of lane l in a packed super-block.
int packed_level(const uint8_t* sb, int l, int e) {
  const int j = e / 16, r = (e % 16) / 4, k = e % 4;
  return sb[j * 64 + 4 * l + k] >> (2 * r) & 3;
}

// Row l's GGUF scale byte of sub-block j.
uint8_t scale_byte(const uint8_t* sb, int l, int j) {
  return sb[kScalesAt + (j / 2) * 32 + 2 * l + j % 2];
}

}  // namespace

void pack_q2_kx16(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst) {
  const int64_t nsb = n_cols / kQK_K;
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int l = 0; l < 16; ++l) {
      const auto* row = reinterpret_cast<const BlockQ2_K*>(static_cast<const uint8_t*>(src) + (g * 16 + l) * row_bytes);
      for (int64_t s = 0; s < nsb; ++s) {
        auto* out = static_cast<uint8_t*>(dst) + (g * nsb + s) * kQ2_Kx16SuperBlockBytes;
        for (int j = 0; j < 16; ++j) {
          for (int k = 0; k < 4; ++k) {
            uint8_t byte = 0;
            for (int r = 0; r < 4; ++r) byte |= static_cast<uint8_t>(gguf_level(row[s], 16 * j + 4 * r + k) << (2 * r));
            out[j * 64 + 4 * l + k] = byte;
          }
          out[kScalesAt + (j / 2) * 32 + 2 * l + j % 2] = row[s].scales[j];
        }
        std::memcpy(out + kDAt + 2 * l, &row[s].d, 2);
        std::memcpy(out + kDminAt + 2 * l, &row[s].dmin, 2);
      }
    }
  }
}

void q2_kx16_row_to_float(const void* group, int l, int64_t n_cols, float* dst) {
  const int64_t nsb = n_cols / kQK_K;
  for (int64_t s = 0; s < nsb; ++s) {
    const auto* sb = static_cast<const uint8_t*>(group) + s * kQ2_Kx16SuperBlockBytes;
    const float d = f16_to_f32(load_u16(sb + kDAt + 2 * l));
    const float dmin = f16_to_f32(load_u16(sb + kDminAt + 2 * l));
    for (int e = 0; e < kQK_K; ++e) {  // as q2_k_to_float rounds
      const uint8_t sm = scale_byte(sb, l, e / 16);
      const float step = d * static_cast<float>(sm & 15);
      const float offset = dmin * static_cast<float>(sm >> 4);
      dst[s * kQK_K + e] = step * static_cast<float>(packed_level(sb, l, e)) - offset;
    }
  }
}

void q8_k_bsum_pairs(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols,
                     int32_t* pairs) {
  const int64_t nsb = n_cols / kQK_K;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
    for (int64_t s = 0; s < nsb; ++s) {
      for (int p = 0; p < 8; ++p) {
        pairs[(t * nsb + s) * 8 + p] = static_cast<int32_t>(
            static_cast<uint32_t>(static_cast<uint16_t>(a[s].bsums[2 * p])) |
            static_cast<uint32_t>(static_cast<uint16_t>(a[s].bsums[2 * p + 1])) << 16);
      }
    }
  }
}

namespace scalar {

void q2_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* /*pairs*/, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  const int64_t nsb = n / kQK_K;
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto* a = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
      for (int l = 0; l < 16; ++l) {
        float acc = 0.0f;
        for (int64_t s = 0; s < nsb; ++s) {
          const auto* sb = static_cast<const uint8_t*>(groups) + (g * nsb + s) * kQ2_Kx16SuperBlockBytes;
          int32_t sumi = 0, summ = 0;
          for (int j = 0; j < 16; ++j) {
            int32_t dot = 0;
            for (int i = 0; i < 16; ++i) dot += packed_level(sb, l, 16 * j + i) * a[s].qs[16 * j + i];
            const uint8_t sm = scale_byte(sb, l, j);
            sumi += (sm & 15) * dot;
            summ += (sm >> 4) * a[s].bsums[j];
          }
          const float d = f16_to_f32(load_u16(sb + kDAt + 2 * l));
          const float dmin = f16_to_f32(load_u16(sb + kDminAt + 2 * l));
          acc = std::fma(d * a[s].d, static_cast<float>(sumi), acc);
          acc = std::fma(-(dmin * a[s].d), static_cast<float>(summ), acc);
        }
        y[t * y_stride + g * 16 + l] = acc;
      }
    }
  }
}

}  // namespace scalar
}  // namespace tessera::kernels
