// AVX2 kernels for the packed 32-element block layouts: Q4_0x16 and IQ4_NLx16 (packed_q4_0.h),
// Q8_0x16 (packed_q8_0.h), Q4_1x16, Q5_0x16 and Q5_1x16 (packed_legacy.h). Bit-identical to the
// scalar references (avx2_packed.h says how).
//
// A 256-bit register holds one int32 or f32 per row for 8 of a group's 16 rows, so a tile keeps
// both 8-row halves against T tokens. Per block the weights' four (Q8_0: eight) 64-byte chunks,
// chunk c holding bytes 4c..4c+3 of each of the 16 rows, are made ready one 32-byte half at a
// time and met by every token's 4 activation bytes of that chunk, broadcast to every lane:
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
// block for all the tile's tokens). Zen 3 and Zen 4 issue vpmaddubsw/vpmaddwd on two pipes, so
// Q4_0 prefill is bound near 8 cycles and Q8_0 near 16 cycles per token and 256 multiply-adds: a
// core does 32 and 16 multiply-adds per cycle.
// Decode (one or two tokens) reads each weight byte once: 288 (Q4_0) or 544 (Q8_0) bytes per 16
// rows and block, bound by memory bandwidth, not these counts.
#include "tessera/kernels/avx2_packed.h"

#include <immintrin.h>

#include <cstring>

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

// Tokens per tile, each tile taking both halves of the group (the activation broadcasts serve
// 16 rows). 2048x5632, kernel_bench CPU time, two alternating rounds on a loaded Zen 4 under
// TESSERA_ISA=avx2, Q8_0 / Q4_0 T64: 11.5-11.7 / 7.8 ms like this; 6 tokens in two one-half
// passes 11.8-12.3 / 8.6-10.9 ms, 8 in two passes 12.3-14.8 / 8.5-10.9, 4 tokens 10.9-13.7 /
// 7.4-9.7; the earlier block-outer tile (all of a half's weights in registers, sums per token
// after) 14.2-15.1 / 7.0-8.9 and 1.5x the decode time (T1 282-302 / 195 us against 200 / 133-141).
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

// One Q4_0-family group (both 8-row halves) against T tokens, blocks in order, one float
// accumulator per output: the numerics of the scalar references exactly. Within a block the
// loop runs over the 8 half-chunks k (k < 4: chunk k's low nibbles, elements 4k + j; k >= 4:
// chunk k - 4's high nibbles, elements 16 + 4 (k - 4) + j), each made ready once and met by every
// token, whose integer sums stay in registers (16-bit pairs where they cannot overflow); so a
// tile needs few registers besides one sum per token and half.
template <int T, Legacy F>
void legacy_tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
                 const int32_t* terms, float* y, int64_t y_stride) {
  constexpr int kHalves = 2, kH0 = 0;
  const __m256i lo_mask = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T][kHalves];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 8
    for (int h = 0; h < kHalves; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + quants_at(F, b);
    const uint8_t* sc = q + scales_at(F, b, nb);
    if constexpr (T <= 2) {  // a block's share of its record's lines, 64 apart
      const size_t block_bytes = q4_0_layout(F) ? 288 : F.layout.block_bytes();
      const uint8_t* ahead = q + b * block_bytes + kPrefetchBytes;
      for (size_t off = 0; off < block_bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_T1);
    }
    __m256i s16[T][kHalves], dot[T][kHalves];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const int c = k & 3;
      __m256i v[kHalves];
#pragma GCC unroll 8
      for (int h = 0; h < kHalves; ++h) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + c * 64 + (kH0 + h) * 32));
        v[h] = _mm256_and_si256(k < 4 ? w : _mm256_srli_epi16(w, 4), lo_mask);
        if constexpr (F.kind == Kind::kSignedLevels) {
          v[h] = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Levels))), v[h]);
        }
        if constexpr (F.kind == Kind::kFiveBits) {
          uint32_t m;
          std::memcpy(&m, q + legacy_x16_bits_at(F.layout, b, nb) + 8 * k + 4 * (kH0 + h), 4);
          v[h] = _mm256_or_si256(v[h], fifth_bits(m));
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int8_t* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[b].qs;
        const __m256i ab = bcast(a + (k < 4 ? 4 * c : 16 + 4 * c));
#pragma GCC unroll 8
        for (int h = 0; h < kHalves; ++h) {
          if constexpr (F.kind == Kind::kSignedLevels) {
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(v[h]), _mm256_sign_epi8(ab, v[h])), ones);
            dot[t][h] = k == 0 ? p : _mm256_add_epi32(dot[t][h], p);
          } else {
            const __m256i p = _mm256_maddubs_epi16(v[h], ab);
            // 4-bit levels: all 8 products in 16 bits; 5-bit: 4 at a time (the header's bounds).
            s16[t][h] = (k == 0 || (F.kind == Kind::kFiveBits && k == 4)) ? p : _mm256_add_epi16(s16[t][h], p);
            if (F.kind == Kind::kFiveBits && k == 3) dot[t][h] = _mm256_madd_epi16(s16[t][h], ones);
            if (k == 7) {
              const __m256i d = _mm256_madd_epi16(s16[t][h], ones);
              dot[t][h] = F.kind == Kind::kFiveBits ? _mm256_add_epi32(dot[t][h], d) : d;
            }
          }
        }
      }
    }
#pragma GCC unroll 8
    for (int h = 0; h < kHalves; ++h) {
      const int hh = kH0 + h;
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + hh * 16)));
      __m256 mw = _mm256_setzero_ps();
      if constexpr (F.has_min) mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 32 + hh * 16)));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const int32_t* tb = terms + 2 * (t * nb + b);
        __m256i d = dot[t][h];
        if constexpr (F.chain_from_terms) d = _mm256_add_epi32(_mm256_set1_epi32(tb[0]), d);
        float da;
        std::memcpy(&da, tb + 1, sizeof da);
        const __m256 vda = _mm256_set1_ps(da);
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, vda), _mm256_cvtepi32_ps(d), acc[t][h]);
        if constexpr (F.has_min) {
          acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(mw, vda), _mm256_set1_ps(static_cast<float>(tb[0])), acc[t][h]);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 8
    for (int h = 0; h < kHalves; ++h) _mm256_storeu_ps(y + t * y_stride + 8 * (kH0 + h), acc[t][h]);
  }
}

template <Legacy F>
struct LegacyTile {
  template <int T>
  struct Of {
    static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb,
                    const int32_t* aux, float* y, int64_t ys) {
      legacy_tile<T, F>(q, n / 32, x, xrb, aux, y, ys);
    }
  };
};

// Q8_0x16: the weights (stored + 128) flipped back to signed and their absolute values made once
// per block and half; per token vpmaddubsw(|w|, sign(a, w)), exact for any weight byte (|-128|
// reads as 128 unsigned) and activations in [-127, 127].
template <int T>
void q8_0_tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
               const int32_t* terms, float* y, int64_t y_stride) {
  constexpr int kHalves = 2, kH0 = 0;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T][kHalves];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 8
    for (int h = 0; h < kHalves; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + q8_0x16_quants_at(b);
    const uint8_t* sc = q + q8_0x16_scales_at(b, nb);
    if constexpr (T <= 2) {  // non-temporal, as the AVX-512 Q8_0x16 tile measured best
      const uint8_t* ahead = q + b * 544 + kPrefetchBytes;
      for (size_t off = 0; off < 544; off += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_NTA);
    }
    __m256i dot[T][kHalves];
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      __m256i w[kHalves], wabs[kHalves];
#pragma GCC unroll 8
      for (int h = 0; h < kHalves; ++h) {
        w[h] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + c * 64 + (kH0 + h) * 32)), flip);
        wabs[h] = _mm256_abs_epi8(w[h]);
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256i ab = bcast(reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[b].qs + 4 * c);
#pragma GCC unroll 8
        for (int h = 0; h < kHalves; ++h) {
          const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs[h], _mm256_sign_epi8(ab, w[h])), ones);
          dot[t][h] = c == 0 ? p : _mm256_add_epi32(dot[t][h], p);
        }
      }
    }
#pragma GCC unroll 8
    for (int h = 0; h < kHalves; ++h) {
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + (kH0 + h) * 16)));
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        float da;
        std::memcpy(&da, terms + 2 * (t * nb + b) + 1, sizeof da);
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(da)), _mm256_cvtepi32_ps(dot[t][h]), acc[t][h]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 8
    for (int h = 0; h < kHalves; ++h) _mm256_storeu_ps(y + t * y_stride + 8 * (kH0 + h), acc[t][h]);
  }
}

template <int T>
struct Q8_0Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q8_0_tile<T>(q, n / 32, x, xrb, aux, y, ys);
  }
};

// The Q4_0x16GemmFn contract for format F (terms: two per token and block).
template <Legacy F>
void legacy_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                 const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride, int64_t n) {
  const size_t group_bytes = q4_0_layout(F) ? q4_0x16_group_bytes(n) : legacy_x16_group_bytes(F.layout, n);
  run_groups<kTokens, LegacyTile<F>::template Of>(groups, group_bytes, n_groups, x, x_row_bytes,
                                                  terms, 2 * (n / 32), n_tokens, y, y_stride, n);
}

}  // namespace

namespace avx2 {

void q4_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  legacy_gemm<kQ4_0>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}

void iq4_nlx16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  legacy_gemm<kIQ4_NL>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}

void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  legacy_gemm<kQ4_1>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}

void q5_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  legacy_gemm<kQ5_0>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}

void q5_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  legacy_gemm<kQ5_1>(groups, n_groups, x, x_row_bytes, terms, n_tokens, y, y_stride, n);
}

void q8_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<kTokens, Q8_0Tile>(groups, q8_0x16_group_bytes(n), n_groups, x, x_row_bytes, terms,
                          2 * (n / 32), n_tokens, y, y_stride, n);
}

}  // namespace avx2
}  // namespace tessera::kernels
