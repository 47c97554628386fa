// Block layouts of the k-quant formats, bit-compatible with GGUF files (GGML type ids 12-15).
// Every format packs a super-block of kQK_K = 256 values; "element e" below is the e-th value of
// that super-block. All multi-byte fields are little-endian, as GGUF stores them.
//
//   Q4_K (144 bytes): 8 sub-blocks of 32, each with a 6-bit scale sc and 6-bit min m.
//       x[e] = d * sc[e/32] * q[e] - dmin * m[e/32],  q in 0..15.
//       qs: four 32-byte groups; in group g (elements 64g..64g+63) byte l holds element 64g+l in
//       its low nibble and element 64g+32+l in its high nibble.
//   Q5_K (176 bytes): as Q4_K with a fifth bit per value, q in 0..31.
//       qh[l] bit 2g is the high bit of element 64g+l, bit 2g+1 that of element 64g+32+l.
//   Q6_K (210 bytes): 16 sub-blocks of 16, each with a signed 8-bit scale.
//       x[e] = d * scales[e/16] * (q[e] - 32),  q in 0..63.
//       Two halves of 128 elements; half h uses ql[64h..64h+63] and qh[32h..32h+31]. For l < 32:
//         element 128h+l     : low nibble of ql[l],      qh[l] bits 0-1 as bits 4-5
//         element 128h+32+l  : low nibble of ql[32+l],   qh[l] bits 2-3
//         element 128h+64+l  : high nibble of ql[l],     qh[l] bits 4-5
//         element 128h+96+l  : high nibble of ql[32+l],  qh[l] bits 6-7
//   Q8_K (292 bytes): activations only (never stored in files). x[e] = d * qs[e], d an f32;
//       bsums[i] = sum of qs[16i..16i+15], so weight formats can fold their offsets per sub-block.
//
// The 12-byte `scales` field of Q4_K/Q5_K packs eight 6-bit (sc, m) pairs; see
// unpack_scale_min() in kquants.h. Thread-safety: plain data.
#pragma once

#include <cstdint>

namespace tessera::kernels {

constexpr int kQK_K = 256;          // values per super-block
constexpr int kKScaleBytes = 12;    // packed 6-bit scales and mins of Q4_K/Q5_K

struct BlockQ4_K {
  uint16_t d;                      // f16 super-block scale of the sub-block scales
  uint16_t dmin;                   // f16 super-block scale of the sub-block mins
  uint8_t scales[kKScaleBytes];    // 8 x (6-bit scale, 6-bit min), packed
  uint8_t qs[kQK_K / 2];           // 4-bit quants
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];           // fifth bit of each quant
  uint8_t qs[kQK_K / 2];           // low 4 bits of each quant
};
static_assert(sizeof(BlockQ5_K) == 176);

struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];           // low 4 bits of each quant
  uint8_t qh[kQK_K / 4];           // high 2 bits of each quant
  int8_t scales[kQK_K / 16];       // per-16 scales
  uint16_t d;                      // f16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

struct BlockQ8_K {
  float d;                         // f32 scale
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];       // sums of qs in groups of 16
};
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace tessera::kernels
