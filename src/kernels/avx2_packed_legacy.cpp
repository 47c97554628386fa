// AVX2 kernels for the packed 32-element block layouts: Q4_0x16 and IQ4_NLx16 (packed_q4_0.h),
// Q8_0x16 (packed_q8_0.h), Q4_1x16, Q5_0x16 and Q5_1x16 (packed_legacy.h). Bit-identical to the
// scalar references (avx2_packed.h says how).
//
// One tile is 8 of a group's 16 rows (a 256-bit register of int32 or f32, one lane per row)
// against T tokens. Per block and half-group the weights' four (Q8_0: eight) 32-byte chunks,
// chunk c holding bytes 4c..4c+3 of each of the 8 rows, are loaded and made ready once for all T
// tokens; per token each chunk meets the token's 4 activation bytes broadcast to every lane:
// vpmaddubsw gives each row two 16-bit pair sums, vpmaddwd against ones the row's 4-byte dot.
//
// Where the integer sums stay below 2^15 they are added as 16-bit pairs before one vpmaddwd:
// 4-bit levels (0..15) against |a| <= 127 give pair sums up to 3,810, so a Q4_0/Q4_1 block's 8
// chunk products sum to at most 30,480; 5-bit levels (Q5_0, Q5_1) up to 7,874, four at a time.
// Signed weights (Q8_0, the IQ4_NL levels) go through the sign trick, vpmaddubsw(|w|, sign(a, w)),
// whose pair sums reach 2 * 128 * 127 = 32,512: one vpmaddwd per chunk. Their chains start from
// zero, not from the reference's -128 * sum(a): sum((w + 128) a) - 128 sum(a) = sum(w a), the same
// exact integer.
//
// Cost per token, 8 rows x 32 columns (256 multiply-adds), counted in vector ALU operations:
// Q4_0 8 vpmaddubsw + 7 16-bit adds + 1 vpmaddwd + 4 float steps = 20 (plus 8 broadcast loads);
// Q8_0 8 x (vpsignb + vpmaddubsw + vpmaddwd + add) + 4 = 36 (plus 8 loads; |w| made once per
// block for all the tile's tokens). Zen 3
// and Zen 4 issue vpmaddubsw/vpmaddwd on two pipes, so Q4_0 prefill is bound near 8 cycles and
// Q8_0 near 16 cycles per token and 256 multiply-adds, a core 32 and 16 multiply-adds per cycle.
// Decode (one or two tokens) reads each weight byte once: 288 (Q4_0) or 544 (Q8_0) bytes per 16
// rows and block, bound by memory bandwidth, not these counts.
#include "tessera/kernels/avx2_packed.h"

#include <immintrin.h>

#include <cstring>

#include "tessera/kernels/half.h"
#include "tessera/kernels/iquant_blocks.h"
#include "tessera/kernels/packed_legacy.h"
#include "tessera/kernels/packed_q4_0.h"
#include "tessera/kernels/packed_q8_0.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/x86_packed_groups.h"

namespace tessera::kernels {
namespace {

// How the weights of one format become maddubs operands and how a token's integer dot is formed.
enum class Kind {
  kNibbles,      // Q4_0, Q4_1: levels 0..15 unsigned; chain from terms[0] (Q4_0) or 0 (Q4_1)
  kFiveBits,     // Q5_0, Q5_1: levels 0..31 unsigned (nibble + 16 x the fifth bit)
  kSignedLevels  // IQ4_NL: signed levels looked up per nibble, the sign trick; chain from 0
};

struct Legacy {
  Kind kind;
  LegacyX16 layout;  // Q4_1/Q5_0/Q5_1 offsets (unused for Q4_0 and IQ4_NL, Q4_0x16's layout)
  bool chain_from_terms;  // the chain starts at terms[0] (Q4_0: -8 sum a; Q5_0: -16 sum a)
  bool has_min;           // a second fma adds m_w * d_x * terms[0] (terms[0] = sum a)
};
constexpr Legacy kQ4_0{Kind::kNibbles, kQ4_1x16, true, false};
constexpr Legacy kIQ4_NL{Kind::kSignedLevels, kQ4_1x16, false, false};
constexpr Legacy kQ4_1{Kind::kNibbles, kQ4_1x16, false, true};
constexpr Legacy kQ5_0{Kind::kFiveBits, kQ5_0x16, true, false};
constexpr Legacy kQ5_1{Kind::kFiveBits, kQ5_1x16, false, true};

constexpr bool q4_0_layout(Legacy f) { return f.kind != Kind::kFiveBits && !f.has_min; }
size_t quants_at(Legacy f, int64_t b) {
  return q4_0_layout(f) ? q4_0x16_quants_at(b) : legacy_x16_quants_at(f.layout, b);
}
size_t scales_at(Legacy f, int64_t b, int64_t nb) {
  return q4_0_layout(f) ? q4_0x16_scales_at(b, nb) : legacy_x16_scales_at(f.layout, b, nb);
}

// Decode tiles prefetch a group's weights this far ahead (the AVX-512 tiles' distance,
// avx512_kernels.cpp): one core's hardware prefetchers alone keep too few lines in flight.
constexpr size_t kPrefetchBytes = 12 * 576;

// Tokens per prefill tile. 2048x5632 T64, kernel_bench CPU time, three alternating rounds on a
// loaded Zen 4 under TESSERA_ISA=avx2: Q4_0 9.7/8.6/7.9 ms with 4, 8.9/7.5/7.6 with 6, 9.7/9.5/8.4
// with 3; Q8_0 within noise of each other (12.1-16.3 ms). Past 6 the accumulators (T per pass)
// and the block's 8 weight registers no longer fit 16 registers.
constexpr int kTokens = 6;

__m256i bcast(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// The 32 fifth bits of 8 rows x 4 elements (bits 32h..32h+31 of a chunk's 64-bit mask, bit 4l + j
// for row l's element j) as bytes 0x10 or 0 in the chunk's byte order.
__m256i fifth_bits(uint32_t m) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(m)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                       3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// Rows [8 kH0, 8 kH1) of one Q4_0-family group against T tokens, blocks in order, one
// accumulator per output: the numerics of the scalar references exactly. Decode tiles (T <= 2)
// take both halves per block, so the group streams once; prefill tiles one half per pass (the
// other half's lines wait in L1/L2), which leaves registers for more tokens.
template <int T, Legacy F, int kH0, int kH1>
void legacy_tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
                 const int32_t* terms, float* y, int64_t y_stride) {
  constexpr int kHalves = kH1 - kH0;
  const __m256i lo_mask = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T][kHalves];
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < kHalves; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + quants_at(F, b);
    const uint8_t* sc = q + scales_at(F, b, nb);
    if constexpr (kHalves == 2) {  // a block's share of its record's lines, 64 bytes apart
      const size_t block_bytes = q4_0_layout(F) ? 288 : F.layout.block_bytes();
      const uint8_t* ahead = q + b * block_bytes + kPrefetchBytes;
      for (size_t off = 0; off < block_bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_T1);
    }
    for (int h = 0; h < kHalves; ++h) {
      const int hh = kH0 + h;
      __m256i lo[4], hi[4];
      for (int c = 0; c < 4; ++c) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + c * 64 + hh * 32));
        lo[c] = _mm256_and_si256(w, lo_mask);
        hi[c] = _mm256_and_si256(_mm256_srli_epi16(w, 4), lo_mask);
        if constexpr (F.kind == Kind::kSignedLevels) {
          const __m256i levels = _mm256_broadcastsi128_si256(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Levels)));
          lo[c] = _mm256_shuffle_epi8(levels, lo[c]);
          hi[c] = _mm256_shuffle_epi8(levels, hi[c]);
        }
        if constexpr (F.kind == Kind::kFiveBits) {
          const uint8_t* bits = q + legacy_x16_bits_at(F.layout, b, nb);
          uint32_t mlo, mhi;
          std::memcpy(&mlo, bits + 8 * c + 4 * hh, 4);
          std::memcpy(&mhi, bits + 8 * (4 + c) + 4 * hh, 4);
          lo[c] = _mm256_or_si256(lo[c], fifth_bits(mlo));
          hi[c] = _mm256_or_si256(hi[c], fifth_bits(mhi));
        }
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + hh * 16)));
      __m256 mw = _mm256_setzero_ps();
      if constexpr (F.has_min) mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 32 + hh * 16)));
      for (int t = 0; t < T; ++t) {
        const int8_t* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[b].qs;
        const int32_t* tb = terms + 2 * (t * nb + b);
        __m256i dot;
        if constexpr (F.kind == Kind::kNibbles) {
          __m256i s = _mm256_maddubs_epi16(lo[0], bcast(a));
          for (int c = 1; c < 4; ++c) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(lo[c], bcast(a + 4 * c)));
          for (int c = 0; c < 4; ++c) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(hi[c], bcast(a + 16 + 4 * c)));
          dot = _mm256_madd_epi16(s, ones);
        } else if constexpr (F.kind == Kind::kFiveBits) {
          __m256i s0 = _mm256_maddubs_epi16(lo[0], bcast(a));
          __m256i s1 = _mm256_maddubs_epi16(hi[0], bcast(a + 16));
          for (int c = 1; c < 4; ++c) {
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(lo[c], bcast(a + 4 * c)));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(hi[c], bcast(a + 16 + 4 * c)));
          }
          dot = _mm256_add_epi32(_mm256_madd_epi16(s0, ones), _mm256_madd_epi16(s1, ones));
        } else {
          dot = _mm256_setzero_si256();
          for (int c = 0; c < 4; ++c) {
            const __m256i al = bcast(a + 4 * c), ah = bcast(a + 16 + 4 * c);
            dot = _mm256_add_epi32(dot, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(lo[c]), _mm256_sign_epi8(al, lo[c])), ones));
            dot = _mm256_add_epi32(dot, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(hi[c]), _mm256_sign_epi8(ah, hi[c])), ones));
          }
        }
        if constexpr (F.chain_from_terms) dot = _mm256_add_epi32(_mm256_set1_epi32(tb[0]), dot);
        float da;
        std::memcpy(&da, tb + 1, sizeof da);
        const __m256 vda = _mm256_set1_ps(da);
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, vda), _mm256_cvtepi32_ps(dot), acc[t][h]);
        if constexpr (F.has_min) {
          acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(mw, vda), _mm256_set1_ps(static_cast<float>(tb[0])), acc[t][h]);
        }
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < kHalves; ++h) _mm256_storeu_ps(y + t * y_stride + 8 * (kH0 + h), acc[t][h]);
  }
}

template <Legacy F>
struct LegacyTile {
  template <int T>
  struct Of {
    static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb,
                    const int32_t* aux, float* y, int64_t ys) {
      if constexpr (T <= 2) {
        legacy_tile<T, F, 0, 2>(q, n / 32, x, xrb, aux, y, ys);
      } else {
        legacy_tile<T, F, 0, 1>(q, n / 32, x, xrb, aux, y, ys);
        legacy_tile<T, F, 1, 2>(q, n / 32, x, xrb, aux, y, ys);
      }
    }
  };
};

// Q8_0x16: the weights (stored + 128) flipped back to signed and their absolute values made once
// per block and half; per token vpmaddubsw(|w|, sign(a, w)), exact for any weight byte (|-128|
// reads as 128 unsigned) and activations in [-127, 127].
template <int T, int kH0, int kH1>
void q8_0_tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
               const int32_t* terms, float* y, int64_t y_stride) {
  constexpr int kHalves = kH1 - kH0;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T][kHalves];
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < kHalves; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + q8_0x16_quants_at(b);
    const uint8_t* sc = q + q8_0x16_scales_at(b, nb);
    if constexpr (kHalves == 2) {  // non-temporal, as the AVX-512 Q8_0x16 tile measured best
      const uint8_t* ahead = q + b * 544 + kPrefetchBytes;
      for (size_t off = 0; off < 544; off += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_NTA);
    }
    for (int h = 0; h < kHalves; ++h) {
      const int hh = kH0 + h;
      __m256i w[8], wabs[8];
      for (int c = 0; c < 8; ++c) {
        w[c] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + c * 64 + hh * 32)), flip);
        wabs[c] = _mm256_abs_epi8(w[c]);
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + hh * 16)));
      for (int t = 0; t < T; ++t) {
        const int8_t* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[b].qs;
        const int32_t* tb = terms + 2 * (t * nb + b);
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        for (int c = 0; c < 8; c += 2) {
          s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(wabs[c], _mm256_sign_epi8(bcast(a + 4 * c), w[c])), ones));
          s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(wabs[c + 1], _mm256_sign_epi8(bcast(a + 4 * c + 4), w[c + 1])), ones));
        }
        float da;
        std::memcpy(&da, tb + 1, sizeof da);
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(da)),
                                    _mm256_cvtepi32_ps(_mm256_add_epi32(s0, s1)), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < kHalves; ++h) _mm256_storeu_ps(y + t * y_stride + 8 * (kH0 + h), acc[t][h]);
  }
}

template <int T>
struct Q8_0Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    if constexpr (T <= 2) {
      q8_0_tile<T, 0, 2>(q, n / 32, x, xrb, aux, y, ys);
    } else {
      q8_0_tile<T, 0, 1>(q, n / 32, x, xrb, aux, y, ys);
      q8_0_tile<T, 1, 2>(q, n / 32, x, xrb, aux, y, ys);
    }
  }
};

}  // namespace

namespace avx2 {

void q4_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<kTokens, LegacyTile<kQ4_0>::Of>(groups, q4_0x16_group_bytes(n), n_groups, x, x_row_bytes,
                                       terms, 2 * (n / 32), n_tokens, y, y_stride, n);
}

void iq4_nlx16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                         const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                         int64_t n) {
  run_groups<kTokens, LegacyTile<kIQ4_NL>::Of>(groups, q4_0x16_group_bytes(n), n_groups, x,
                                         x_row_bytes, terms, 2 * (n / 32), n_tokens, y, y_stride, n);
}

void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<kTokens, LegacyTile<kQ4_1>::Of>(groups, q4_1x16_group_bytes(n), n_groups, x, x_row_bytes,
                                       terms, 2 * (n / 32), n_tokens, y, y_stride, n);
}

void q5_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<kTokens, LegacyTile<kQ5_0>::Of>(groups, q5_0x16_group_bytes(n), n_groups, x, x_row_bytes,
                                       terms, 2 * (n / 32), n_tokens, y, y_stride, n);
}

void q5_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<kTokens, LegacyTile<kQ5_1>::Of>(groups, q5_1x16_group_bytes(n), n_groups, x, x_row_bytes,
                                       terms, 2 * (n / 32), n_tokens, y, y_stride, n);
}

}  // namespace avx2

namespace avx2 {

void q8_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<kTokens, Q8_0Tile>(groups, q8_0x16_group_bytes(n), n_groups, x, x_row_bytes, terms,
                          2 * (n / 32), n_tokens, y, y_stride, n);
}

}  // namespace avx2
}  // namespace tessera::kernels
