// Block layouts of the low-bit k-quant formats Q2_K and Q3_K, bit-compatible with GGUF files
// (GGML type ids 10 and 11). Like the other k-quants (kquant_blocks.h) each block codes a
// super-block of kQK_K = 256 values, here in 16 sub-blocks of 16. Multi-byte fields are
// little-endian. Element e of a super-block has position
//     h = e / 128 (half), k = (e / 32) % 4 (bit pair within a byte), l = e % 32 (byte),
// and its two low quant bits are bits 2k and 2k+1 of qs[32h + l]. Sub-block j = e / 16.
//
//   Q2_K (84 bytes): x[e] = (d * sc[j]) * q[e] - dmin * m[j],  q in 0..3.
//       scales[j] holds sc[j] (4 bits) in its low nibble and m[j] (4 bits) in its high nibble;
//       d and dmin are f16.
//   Q3_K (110 bytes): x[e] = (d * (s[j] - 32)) * q[e],  q = low bits + 4 * high bit - 4 in -4..3.
//       The high bit of element e is bit e / 32 of hmask[l]. The 12 bytes `scales` pack sixteen
//       6-bit codes s[j]: the low nibble of s[j] is the low (j < 8) or high (j >= 8) nibble of
//       byte j % 8; its top two bits are bits 2 * (j / 4) and 2 * (j / 4) + 1 of byte 8 + j % 4.
//       d is f16.
// The parenthesized products are how decoders (ours and GGML's) round: the sub-block step is
// formed in f32 first, then multiplied by the level.
// Thread-safety: plain data.
#pragma once

#include <cstdint>

#include "tessera/kernels/kquant_blocks.h"

namespace tessera::kernels {

constexpr int kQ3KScaleBytes = 12;  // sixteen packed 6-bit scale codes of Q3_K

struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // per sub-block: 4-bit scale (low nibble), 4-bit min (high)
  uint8_t qs[kQK_K / 4];       // 2-bit quants
  uint16_t d;                  // f16 super-block scale of the sub-block scales
  uint16_t dmin;               // f16 super-block scale of the sub-block mins
};
static_assert(sizeof(BlockQ2_K) == 84);

struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];         // third (high) bit of each quant
  uint8_t qs[kQK_K / 4];            // low 2 bits of each quant
  uint8_t scales[kQ3KScaleBytes];   // 16 x 6-bit scale codes, packed
  uint16_t d;                       // f16 super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110);

}  // namespace tessera::kernels
