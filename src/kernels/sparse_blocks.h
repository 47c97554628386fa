// Block layouts of Tessera's 2:4 sparse types: of every aligned group of 4 consecutive weights
// in a row, exactly 2 are kept (the other two are zero), and only the kept values are stored,
// in position order, with a keep-mask: bit j of the block's little-endian mask word is set
// when weight j of the block is kept (so each nibble of the mask has exactly two bits set).
// The mask is what AVX-512 VBMI2's vpexpandb/vpexpandw take to place the kept values back in
// their dense positions (zeros between); the kernels compute an equivalent shuffle instead,
// which measured faster on Zen 4 (sparse_quants.h).
//
//   F16_2of4  (DType id 1024): 32 weights = u32 mask + 16 f16 kept values          = 36 bytes
//   Q8_0_2of4 (id 1025):       32 weights = f16 d + u32 mask + 16 int8 q; x = d*q   = 22 bytes
//   Q4_0_2of4 (id 1026):       64 weights = f16 d + u64 mask + 16 bytes of nibbles   = 26 bytes
//       kept value k (0..31 in position order) is the low nibble of byte k for k < 16, the high
//       nibble of byte k - 16 otherwise (as Q4_0 orders its 32 values); x = d * (q - 8). The 16
//       kept values of the block's first 32 weights are the low nibbles, of its last 32 the
//       high ones: one scale per 32 kept values, as Q4_0 has.
// Bytes per 32 weights against the dense type: F16 36 vs 64 (1.78x fewer), Q8_0 22 vs 34
// (1.55x), Q4_0 13 vs 18 (1.38x). The mask words are stored as u16 pairs so the blocks need
// only 2-byte alignment (22 and 26 are not multiples of 4).
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <cstring>

namespace tessera::kernels {

constexpr int kQK2of4 = 32;      // weights per F16_2of4 / Q8_0_2of4 block
constexpr int kQK4_0_2of4 = 64;  // weights per Q4_0_2of4 block

struct BlockF16_2of4 {
  uint16_t mask[2];  // u32 keep-mask, little-endian
  uint16_t v[16];    // kept values, f16
};
static_assert(sizeof(BlockF16_2of4) == 36);

struct BlockQ8_0_2of4 {
  uint16_t d;        // f16 scale
  uint16_t mask[2];  // u32 keep-mask
  int8_t qs[16];     // kept quants
};
static_assert(sizeof(BlockQ8_0_2of4) == 22);

struct BlockQ4_0_2of4 {
  uint16_t d;        // f16 scale
  uint16_t mask[4];  // u64 keep-mask
  uint8_t qs[16];    // 32 kept nibbles
};
static_assert(sizeof(BlockQ4_0_2of4) == 26);

inline uint32_t load_mask32(const uint16_t* m) {
  uint32_t v;
  std::memcpy(&v, m, 4);
  return v;
}
inline uint64_t load_mask64(const uint16_t* m) {
  uint64_t v;
  std::memcpy(&v, m, 8);
  return v;
}

// True when every nibble of the `n_nibbles` low nibbles of `mask` has exactly two bits set.
inline bool mask_is_2of4(uint64_t mask, int n_nibbles) {
  // Bit counts of every nibble at once (no popcnt instruction in baseline x86-64).
  uint64_t c = mask - ((mask >> 1) & 0x5555555555555555ull);
  c = (c & 0x3333333333333333ull) + ((c >> 2) & 0x3333333333333333ull);
  const uint64_t used = n_nibbles >= 16 ? ~0ull : (uint64_t{1} << (4 * n_nibbles)) - 1;
  return (c & used) == (0x2222222222222222ull & used);
}

}  // namespace tessera::kernels
