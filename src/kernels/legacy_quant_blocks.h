// Block layouts of GGML's older 32-value formats with a fifth bit or a per-block minimum,
// bit-compatible with GGUF files (GGML type ids 3, 6 and 7). All multi-byte fields are
// little-endian, as GGUF stores them; "element e" is the e-th of the block's 32 values.
//
//   Q4_1 (20 bytes): f16 step d, f16 minimum m, 16 bytes of 4-bit levels q in 0..15.
//       x[e] = d * q[e] + m  (the product rounded to f32, then the sum).
//   Q5_0 (22 bytes): f16 step d, 4 bytes qh, 16 bytes of low nibbles; q in 0..31.
//       x[e] = d * (q[e] - 16).
//   Q5_1 (24 bytes): f16 step d, f16 minimum m, qh, nibbles; q in 0..31.
//       x[e] = d * q[e] + m.
//
// Nibbles, all three formats: for j < 16, byte qs[j] holds element j in its low four bits and
// element j + 16 in its high four bits (as Q4_0 does).
// Fifth bits (Q5_0, Q5_1): read qh as one little-endian 32-bit word; its bit e is bit 4 of q[e].
// So qh byte k holds the fifth bits of elements 8k .. 8k+7, lowest element in bit 0.
// Thread-safety: plain data.
#pragma once

#include <cstdint>

namespace tessera::kernels {

constexpr int kQKLegacy = 32;  // values per block in all three formats

struct BlockQ4_1 {
  uint16_t d;                  // f16 step
  uint16_t m;                  // f16 value of level 0
  uint8_t qs[kQKLegacy / 2];   // 4-bit levels, two per byte
};
static_assert(sizeof(BlockQ4_1) == 20);

struct BlockQ5_0 {
  uint16_t d;                  // f16 step
  uint8_t qh[4];               // fifth bit of each level
  uint8_t qs[kQKLegacy / 2];   // low four bits of each level
};
static_assert(sizeof(BlockQ5_0) == 22);

struct BlockQ5_1 {
  uint16_t d;                  // f16 step
  uint16_t m;                  // f16 value of level 0
  uint8_t qh[4];               // fifth bit of each level
  uint8_t qs[kQKLegacy / 2];   // low four bits of each level
};
static_assert(sizeof(BlockQ5_1) == 24);

}  // namespace tessera::kernels
