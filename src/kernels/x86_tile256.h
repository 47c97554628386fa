// The R x T tile (kernel_table.h's vec_dot_tile) of 256-value super-block weights against Q8_K
// tokens, shared by the AVX2 and AVX-512 translation units of Q2_K, Q3_K (x86_kquants_low.h) and
// IQ4_XS (x86_iquants.h). Not a public header: each including file gets its own internal copy
// compiled with its own flags (as x86_legacy_quants.h).
//
// Per super-block, each of the R rows is unpacked once into a small stack buffer (an Unpacked256:
// for each 32-value group, 32 unsigned level bytes, optionally 32 signs, and 16 int16 sub-block
// scales laid out as maddubs lays out its pair sums), then every token's activations are loaded
// once per group for all R rows: per (row, token, group) one maddubs of levels by activations and
// one `Dot::wacc(acc, pairs, scales)` (acc + madd(pairs, scales); one vpdpwssd with AVX-512 VNNI).
// A `Format` supplies:
//   Format::Block, Format::Row (per row and super-block values the float step needs),
//   Format::kSigned             levels are signed: the unsigned side gets |level| and the
//                               activations take the level's sign (as avx2_iquants.cpp does)
//   Format::unpack(block, Unpacked256&) -> Row
//   Format::block(row, q8_k block, int32 dot) -> float, the block's term of the sum, formed by the
//                               scalar reference's float operations from the same exact integers
// and outputs add those terms in block order, so every output equals the scalar reference (and
// so the same ISA's vec_dot, bit-identical to it) bit for bit. Compile with -ffp-contract=off.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/kquant_blocks.h"
#include "x86_tile_dispatch.h"

namespace tessera::kernels {
namespace {

constexpr int kGroups256 = kQK_K / 32;  // 32-value groups per super-block

struct Unpacked256 {
  alignas(32) uint8_t levels[kGroups256][32];  // unsigned side of maddubs
  alignas(32) int8_t signs[kGroups256][32];    // kSigned formats: the levels themselves
  alignas(32) int16_t scales[kGroups256][16];  // scale of the pair sum in each int16 lane
};

int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

__m256i load_si256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
__m256i load_aligned(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }

// int16 lanes 0-7 = lo, 8-15 = hi: the two 16-value sub-blocks of a 32-value group under maddubs.
void store_pair_scales(int16_t* dst, int lo, int hi) {
  _mm256_store_si256(reinterpret_cast<__m256i*>(dst),
                     _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(hi)),
                                      _mm_set1_epi16(static_cast<int16_t>(lo))));
}

template <class Format, class Dot, int R, int T>
void tile256(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
             float* y, int64_t y_stride, int64_t n) {
  using Block = typename Format::Block;
  const int64_t nb = n / kQK_K;
  float sum[R][T] = {};
  Unpacked256 u[R];
  typename Format::Row row[R];
  for (int64_t i = 0; i < nb; ++i) {
    for (int r = 0; r < R; ++r) {
      row[r] = Format::unpack(reinterpret_cast<const Block*>(w + r * w_row_bytes)[i], u[r]);
    }
    for (int t = 0; t < T; ++t) {
      const BlockQ8_K& a = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes)[i];
      __m256i acc[R];
      for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
      for (int g = 0; g < kGroups256; ++g) {
        const __m256i q = load_si256(a.qs + 32 * g);
        for (int r = 0; r < R; ++r) {
          const __m256i s =
              Format::kSigned ? _mm256_sign_epi8(q, load_aligned(u[r].signs[g])) : q;
          const __m256i pairs = _mm256_maddubs_epi16(load_aligned(u[r].levels[g]), s);
          acc[r] = Dot::wacc(acc[r], pairs, load_aligned(u[r].scales[g]));
        }
      }
      for (int r = 0; r < R; ++r) sum[r][t] += Format::block(row[r], a, hsum_epi32(acc[r]));
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = sum[r][t];
  }
}

// Kernel of dispatch_tile for a tile256 format.
template <class Format, class Dot>
struct Tile256 {
  template <int R, int T>
  static void run(const std::byte* w, size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                  float* y, int64_t y_stride, int64_t n) {
    tile256<Format, Dot, R, T>(w, w_row_bytes, x, x_row_bytes, y, y_stride, n);
  }
};

}  // namespace
}  // namespace tessera::kernels
