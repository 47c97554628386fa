// Block layouts of the 4-bit non-linear formats IQ4_NL and IQ4_XS, bit-compatible with GGUF files
// (GGML type ids 20 and 23), and the 16-entry level table both share. Instead of evenly spaced
// levels these formats index a fixed table of int8 levels, denser near zero, where most weights
// lie. Multi-byte fields are little-endian, as GGUF stores them.
//
//   IQ4_NL (18 bytes per 32 values): x[e] = d * kIQ4Levels[q[e]], d an f16.
//       Byte j of qs holds element j in its low nibble and element j + 16 in its high nibble.
//   IQ4_XS (136 bytes per 256 values): eight 32-value sub-blocks, each with a 6-bit scale s in
//       0..63 (signed step s - 32 in -32..31):  x[e] = (d * (s[e/32] - 32)) * kIQ4Levels[q[e]].
//       Sub-block j's scale: low four bits in scales_l[j/2] (low nibble for even j, high for
//       odd), top two bits in bits 2j and 2j+1 of scales_h. Its 32 indices sit in qs[16j..16j+15]
//       as in an IQ4_NL block: low nibbles elements 0-15, high nibbles elements 16-31.
// Thread-safety: plain data and a constant table.
#pragma once

#include <cstdint>

#include "tessera/kernels/kquant_blocks.h"

namespace tessera::kernels {

// The levels a 4-bit index selects, a constant of the GGUF format (files depend on these exact
// numbers). Ascending; note the asymmetry: -127 at the bottom, 113 at the top.
inline constexpr int8_t kIQ4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

constexpr int kQK4_NL = 32;  // values per IQ4_NL block, and per IQ4_XS sub-block

struct BlockIQ4_NL {
  uint16_t d;                  // f16 scale
  uint8_t qs[kQK4_NL / 2];     // 4-bit table indices
};
static_assert(sizeof(BlockIQ4_NL) == 18);

struct BlockIQ4_XS {
  uint16_t d;                  // f16 super-block scale
  uint16_t scales_h;           // top two bits of the eight 6-bit sub-block scales
  uint8_t scales_l[kQK_K / 64];  // low four bits of the sub-block scales, two per byte
  uint8_t qs[kQK_K / 2];       // 4-bit table indices
};
static_assert(sizeof(BlockIQ4_XS) == 136);

}  // namespace tessera::kernels
