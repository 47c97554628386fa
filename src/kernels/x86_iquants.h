// The IQ4_NL / IQ4_XS tile formats shared by the AVX2 and AVX-512 translation units
// (avx2_iquants.cpp, avx512_iquants.cpp); the tiles themselves are x86_tile32.h (IQ4_NL, Q8_0
// activations) and x86_tile256.h (IQ4_XS, Q8_K). `Dot` is the including file's: u8s8(u, s) and
// acc(c, u, s) = c + u8s8(u, s) over 32 unsigned x signed bytes into 8 int32 lanes, wacc(c, p, w)
// = c + madd(p, w), and kVnni. Not a public header: each including file gets its own internal
// copy compiled with its own flags (as x86_legacy_quants.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "tessera/kernels/iquant_blocks.h"
#include "tessera/kernels/quant_blocks.h"
#include "x86_tile256.h"
#include "x86_tile32.h"

namespace tessera::kernels {
namespace {

// The 32 table indices of a 32-value group (IQ4_NL nibble layout) in element order.
__m256i iq4_indices(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0f));
}

// The levels (offset: plus 128, as unsigned bytes) in both 128-bit lanes, for vpshufb lookups.
__m256i iq4_table(bool offset) {
  __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Levels));
  if (offset) t = _mm_xor_si128(t, _mm_set1_epi8(static_cast<char>(0x80)));  // + 128 mod 256
  return _mm256_set_m128i(t, t);
}

// IQ4_NL. With VNNI the levels are looked up plus 128 (unsigned, as vpdpbusd wants) and each
// token's -128 * sum(a) starts the accumulator: one vpdpbusd per (row, token) gives the signed
// dot. AVX2's maddubs would saturate on 255 * 127 pairs, so there the signed levels meet the
// activations through the sign trick (|level| unsigned, the level's sign moved onto a).
template <class Dot>
struct IQ4_NLFormat {
  using Block = BlockIQ4_NL;
  static constexpr bool kAffine = false;
  struct Weight {
    __m256i u, l;  // VNNI: u = level + 128; else u = |level|, l = level
  };
  struct Act {
    __m256i q, start;
  };
  static Weight weight(const Block& b) {
    const __m256i idx = iq4_indices(b.qs);
    if constexpr (Dot::kVnni) {
      return {_mm256_shuffle_epi8(iq4_table(true), idx), _mm256_setzero_si256()};
    } else {
      const __m256i l = _mm256_shuffle_epi8(iq4_table(false), idx);
      return {_mm256_sign_epi8(l, l), l};
    }
  }
  static Act act(const BlockQ8_0& a) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs));
    if constexpr (Dot::kVnni) {
      const __m256i q128 = Dot::u8s8(_mm256_set1_epi8(static_cast<char>(0x80)), q);
      return {q, _mm256_sub_epi32(_mm256_setzero_si256(), q128)};
    } else {
      return {q, _mm256_setzero_si256()};
    }
  }
  static __m256i dot(const Weight& w, const Act& a) {
    if constexpr (Dot::kVnni) {
      return Dot::acc(a.start, w.u, a.q);
    } else {
      return Dot::u8s8(w.u, _mm256_sign_epi8(a.q, w.l));
    }
  }
};

// IQ4_XS: signed levels (the tile's sign trick), each sub-block's step s - 32 as the scale of
// both halves of its group.
struct IQ4_XSTileFormat {
  using Block = BlockIQ4_XS;
  static constexpr bool kSigned = true;
  struct Row {
    float d;
  };
  static Row unpack(const Block& b, Unpacked256& u) {
    const __m256i table = iq4_table(false);
    for (int j = 0; j < kGroups256; ++j) {
      const __m256i l = _mm256_shuffle_epi8(table, iq4_indices(b.qs + 16 * j));
      _mm256_store_si256(reinterpret_cast<__m256i*>(u.levels[j]), _mm256_sign_epi8(l, l));
      _mm256_store_si256(reinterpret_cast<__m256i*>(u.signs[j]), l);
      const int scale =
          (((b.scales_l[j / 2] >> (4 * (j % 2))) & 15) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
      store_pair_scales(u.scales[j], scale, scale);
    }
    return {_cvtsh_ss(b.d)};
  }
  static float block(const Row& row, const BlockQ8_K& a, int32_t dot) {
    const float d = a.d * row.d;
    return d * static_cast<float>(dot);
  }
};

}  // namespace
}  // namespace tessera::kernels
