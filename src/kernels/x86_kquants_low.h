// Pieces of the Q2_K / Q3_K kernels shared by the AVX2 and AVX-512 translation units
// (avx2_kquants_low.cpp, avx512_kquants_low.cpp): the Q3_K scale unpacking and the two formats'
// tiles (x86_tile256.h). Not a public header: each including file gets its own internal copy
// compiled with its own flags (as x86_legacy_quants.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "tessera/kernels/kquant_low_blocks.h"
#include "x86_tile256.h"

namespace tessera::kernels {
namespace {

// The sixteen Q3_K scales s - 32 as int8 lanes, in sub-block order (layout in
// kquant_low_blocks.h): low nibbles from bytes 0-7 (low halves, then high halves), top bits from
// the 32-bit word of bytes 8-11 shifted by 0, 2, 4, 6 for sub-blocks 0-3, 4-7, 8-11, 12-15.
__m128i q3_scales8(const uint8_t* p) {
  const __m128i low4 = _mm_set1_epi8(15);
  const __m128i packed = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(packed, low4),
                                         _mm_and_si128(_mm_srli_epi16(packed, 4), low4));
  uint32_t top;
  __builtin_memcpy(&top, p + 8, 4);
  const __m128i tops = _mm_and_si128(
      _mm_set_epi32(static_cast<int>(top >> 6), static_cast<int>(top >> 4),
                    static_cast<int>(top >> 2), static_cast<int>(top)),
      _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(tops, 4)), _mm_set1_epi8(32));
}

// Group g = 4h + k of a super-block (elements 32g .. 32g+31) takes bit pair k of qs[32h ..].
__m256i two_bit_levels(__m256i q, int k) {
  return _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * k)), _mm256_set1_epi8(3));
}

// The sixteen int8 scales at `s` as pair scales of the eight groups.
void store_group_scales(const int8_t* s, Unpacked256& u) {
  for (int g = 0; g < kGroups256; ++g) store_pair_scales(u.scales[g], s[2 * g], s[2 * g + 1]);
}

// Q3_K: the levels carry +4 (0..7, unsigned); the tile's integer dot is sum s_j (q + 4) a, and
// block() removes 4 sum_j s_j (sum of a over j) through the Q8_K bsums, as the vec_dots do.
struct Q3_KTileFormat {
  using Block = BlockQ3_K;
  static constexpr bool kSigned = false;
  struct Row {
    __m256i scales16;  // s_j - 32 as int16
    float d;
  };
  static Row unpack(const Block& b, Unpacked256& u) {
    const __m128i sc8 = q3_scales8(b.scales);
    alignas(16) int8_t s[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(s), sc8);
    store_group_scales(s, u);
    const __m256i hm = load_si256(b.hmask);
    for (int h = 0; h < 2; ++h) {
      const __m256i q = load_si256(b.qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const int bit = 4 * h + k;  // hmask bit of group `bit`, moved to bit 2 of each byte
        const __m256i hb = _mm256_slli_epi16(
            _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(bit)), _mm256_set1_epi8(1)), 2);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.levels[bit]),
                           _mm256_or_si256(two_bit_levels(q, k), hb));
      }
    }
    return {_mm256_cvtepi8_epi16(sc8), _cvtsh_ss(b.d)};
  }
  static float block(const Row& row, const BlockQ8_K& a, int32_t dot) {
    const __m256i bs = load_si256(a.bsums);
    const int32_t isum = dot - 4 * hsum_epi32(_mm256_madd_epi16(bs, row.scales16));
    const float d = a.d * row.d;
    return d * static_cast<float>(isum);
  }
};

// Q2_K: levels 0..3; the minimums' term comes from the bsums.
struct Q2_KTileFormat {
  using Block = BlockQ2_K;
  static constexpr bool kSigned = false;
  struct Row {
    __m256i mins16;  // m_j as int16
    float d, dmin;
  };
  static Row unpack(const Block& b, Unpacked256& u) {
    const __m128i low4 = _mm_set1_epi8(15);
    const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    alignas(16) int8_t s[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(s), _mm_and_si128(sm, low4));
    store_group_scales(s, u);
    for (int h = 0; h < 2; ++h) {
      const __m256i q = load_si256(b.qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.levels[4 * h + k]), two_bit_levels(q, k));
      }
    }
    return {_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), low4)), _cvtsh_ss(b.d),
            _cvtsh_ss(b.dmin)};
  }
  static float block(const Row& row, const BlockQ8_K& a, int32_t isum) {
    const __m256i bs = load_si256(a.bsums);
    const int32_t msum = hsum_epi32(_mm256_madd_epi16(bs, row.mins16));
    const float d = a.d * row.d;
    const float dmin = a.d * row.dmin;
    return d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
};

}  // namespace
}  // namespace tessera::kernels
