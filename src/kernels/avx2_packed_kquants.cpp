// AVX2 kernels for the packed k-quant layouts Q4_Kx16 (packed_q4_k.h), Q2_Kx16 (packed_q2_k.h) and
// Q6_Kx16 (packed_q6_k.h) over Q8_K activations, bit for bit the scalar references. Compiled with
// -mavx2 -mfma -mf16c -ffp-contract=off (CMakeLists.txt); as in avx2_kernels.cpp, only intrinsics
// and file-local helpers run here, so no AVX2 copy of a shared inline function can reach a CPU
// without AVX2, and no vector mul/add is fused behind the references' backs.
//
// A 256-bit register holds 8 of a group's 16 rows (one dword of 4 weight bytes per row), so every
// step runs on two halves. Without vpdpbusd the integer dots are vpmaddubsw (unsigned weight bytes
// x signed activation bytes -> 16-bit pair sums) accumulated in 16 bits over a whole sub-block,
// then one vpmaddwd against the rows' sub-block scales (each scale in both 16-bit halves of its
// row's dword) gives sc_j * dot_j in 32 bits. No 16-bit sum can saturate, even at the -128 a
// Q8_K quant could hold (q8_k_from_float makes [-127, 127]): Q4_K sums 8 pairs of at most
// 2 * 15 * 128 = 3840 (30720 < 32767), Q2_K 4 pairs of at most 2 * 3 * 128 = 768; Q6_K, whose
// pairs reach 2 * 63 * 128 = 16128, sums only 2 of them, with one vpmaddwd per two chunks.
// The float steps are the references' (packed_q4_k.h "Numerics"), in their order.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/avx2_packed.h"
#include "tessera/kernels/kquant_blocks.h"
#include "tessera/kernels/packed_q2_k.h"
#include "tessera/kernels/packed_q4_k.h"
#include "tessera/kernels/packed_q6_k.h"
#include "tessera/kernels/x86_packed_groups.h"

namespace tessera::kernels::avx2 {
namespace {

// How far ahead (bytes) a decode tile prefetches its group into L2: the AVX-512 tiles' distance
// (avx512_kernels.cpp kPackedPrefetchBytes, measured on TinyLlama decode). Kept because it
// measured faster here too (kernel_bench TESSERA_ISA=avx2 R2048xC5632 T1/cold/packed16, the Zen 5 VM,
// 2 busy cores, CPU-time medians of 3, two alternating rounds): Q4_K 206-274 us against 537-542
// without, Q2_K 220-228 against 275-367.
constexpr int kPrefetchBytes = 12 * 576;

// Tokens whose 16-bit sums stay in registers at once: 4 tokens x 2 halves = 8 accumulators, plus
// two weight registers, a broadcast activation, two products and the nibble mask (14 of 16 ymm).
constexpr int kSubTile = 4;

// Four activation bytes at p broadcast to every dword (vpbroadcastd from memory: a load, no
// shuffle; an int32 copy went through a general register on GCC, avx512_kernels.cpp BlockDwords).
__m256i broadcast_dword(const int8_t* p) { return _mm256_broadcastd_epi32(_mm_loadu_si32(p)); }

// Eight unsigned bytes at p, each in both 16-bit halves of its dword (vpmaddwd's pair operand).
__m256i dword_pairs_u8(const uint8_t* p) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
}

__m256 load_f16x8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// acc = fma(d_l * d_t, float(sumi), acc), then acc = fma(-(dmin_l * d_t), float(summ), acc): the
// references' two float steps per super-block, for one half of a token's 16 outputs.
__m256 fold_super_block(__m256 acc, __m256 d, __m256 dmin, __m256 da, __m256i sumi, __m256i summ) {
  acc = _mm256_fmadd_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(sumi), acc);
  return _mm256_fnmadd_ps(_mm256_mul_ps(dmin, da), _mm256_cvtepi32_ps(summ), acc);
}

// Compile-time loop over a tile's tokens in sub-tiles of at most kSubTile: f.template
// operator()<U>(t0) for each sub-tile [t0, t0 + U).
template <int T, int T0 = 0, class F>
void for_each_sub_tile(const F& f) {
  if constexpr (T0 < T) {
    constexpr int U = T - T0 < kSubTile ? T - T0 : kSubTile;
    f.template operator()<U>(T0);
    for_each_sub_tile<T, T0 + U>(f);
  }
}

// --- Q4_Kx16 ----------------------------------------------------------------------------------

constexpr size_t kQ4ScalesAt = 2048, kQ4MinsAt = 2048 + 128, kQ4DAt = 2048 + 256,
                 kQ4DminAt = 2048 + 288;

// Sub-block j's dots for U tokens (activation bytes of the sub-block at a[u]): per chunk c the
// weights' two halves are unpacked once (low nibbles when kHigh is false) and met by every token's
// broadcast dword; the 16-bit sums then meet the rows' scales sc[2] and add to sumi[u][2].
// Per 256 MACs (8 rows x 32 elements of one token): 8 vpmaddubsw + 1 vpmaddwd, which only the
// two multiply pipes of Zen 3/4 run (4.5 cycles: the bound on prefill), 7 vpaddw + 1 vpaddd,
// the sub-tile's share of the unpack (3 ops), 4 broadcast loads (shared by the halves) and the
// register moves GCC adds to the loop (about 4): some 28 ops, 4.7 cycles of Zen's 6-wide
// dispatch, so dispatch is nearly as tight as the multiply pipes.
template <int U, bool kHigh>
void q4_k_sub_block(const uint8_t* qk, const int8_t* const* a, const __m256i* sc,
                    __m256i (*sumi)[2]) {
  const __m256i mask = _mm256_set1_epi8(0x0f);
  __m256i s16[U][2];
  // Chunk c's products for every token; `add` false for the first chunk, which starts the sums.
  auto chunk = [&](int c, bool add) {
    __m256i w[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qk + c * 64 + h * 32));
      w[h] = _mm256_and_si256(kHigh ? _mm256_srli_epi16(raw, 4) : raw, mask);
    }
    for (int u = 0; u < U; ++u) {
      const __m256i av = broadcast_dword(a[u] + 4 * c);
      for (int h = 0; h < 2; ++h) {
        const __m256i p = _mm256_maddubs_epi16(w[h], av);
        s16[u][h] = add ? _mm256_add_epi16(s16[u][h], p) : p;
      }
    }
  };
  chunk(0, false);
  // Not unrolled: unrolled, GCC hoisted all eight chunks' products and spilled them.
#pragma GCC unroll 1
  for (int c = 1; c < 8; ++c) chunk(c, true);
  for (int u = 0; u < U; ++u) {
    for (int h = 0; h < 2; ++h) sumi[u][h] = _mm256_add_epi32(sumi[u][h], _mm256_madd_epi16(s16[u][h], sc[h]));
  }
}

// A tile of one Q4_Kx16 group against T Q8_K tokens (x, x_row_bytes apart; their min pairs at
// pairs + t * 4 * nsb): y[t * y_stride + l] for l < 16.
template <int T>
void q4_kx16_tile(const uint8_t* q, int64_t nsb, const std::byte* x, size_t x_row_bytes,
                  const int32_t* pairs, float* y, int64_t y_stride) {
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* sb = q + s * kQ4_Kx16SuperBlockBytes;
    const BlockQ8_K* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes) + s;
    __m256i sumi[T][2];
    for (int t = 0; t < T; ++t) sumi[t][0] = sumi[t][1] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {  // sub-block j: chunk k = j / 2, low nibbles when j is even
      if (T <= 2) {  // the super-block's 37 lines, 5 per sub-block, kPrefetchBytes ahead
        for (int c = 0; c < 5 && j * 5 + c < 37; ++c) {
          _mm_prefetch(reinterpret_cast<const char*>(sb + kPrefetchBytes + (j * 5 + c) * 64), _MM_HINT_T1);
        }
      }
      const __m256i sc[2] = {dword_pairs_u8(sb + kQ4ScalesAt + j * 16),
                             dword_pairs_u8(sb + kQ4ScalesAt + j * 16 + 8)};
      const int a_off = 64 * (j / 2) + 32 * (j % 2);
      const uint8_t* qk = sb + (j / 2) * 512;
      for_each_sub_tile<T>([&]<int U>(int t0) {
        const int8_t* as[U];
        for (int u = 0; u < U; ++u) as[u] = a[t0 + u]->qs + a_off;
        if (j % 2 == 0) {
          q4_k_sub_block<U, false>(qk, as, sc, sumi + t0);
        } else {
          q4_k_sub_block<U, true>(qk, as, sc, sumi + t0);
        }
      });
    }
    // The mins: summ = sum_p (m_2p, m_2p+1) . (b(2p), b(2p+1)), one vpmaddwd per pair and half.
    __m256i mins[4][2];
    for (int p = 0; p < 4; ++p) {
      for (int h = 0; h < 2; ++h) {
        mins[p][h] = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQ4MinsAt + p * 32 + h * 16)));
      }
    }
    const __m256 d[2] = {load_f16x8(sb + kQ4DAt), load_f16x8(sb + kQ4DAt + 16)};
    const __m256 dmin[2] = {load_f16x8(sb + kQ4DminAt), load_f16x8(sb + kQ4DminAt + 16)};
    for (int t = 0; t < T; ++t) {
      const int32_t* pr = pairs + (t * nsb + s) * 4;
      const __m256 da = _mm256_set1_ps(a[t]->d);
      for (int h = 0; h < 2; ++h) {
        __m256i summ = _mm256_madd_epi16(mins[0][h], _mm256_set1_epi32(pr[0]));
        for (int p = 1; p < 4; ++p) summ = _mm256_add_epi32(summ, _mm256_madd_epi16(mins[p][h], _mm256_set1_epi32(pr[p])));
        acc[t][h] = fold_super_block(acc[t][h], d[h], dmin[h], da, sumi[t][h], summ);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(y + t * y_stride + 8 * h, acc[t][h]);
  }
}

template <int T>
struct Q4_Kx16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q4_kx16_tile<T>(q, n / kQK_K, x, xrb, aux, y, ys);
  }
};

// --- Q2_Kx16 ----------------------------------------------------------------------------------

constexpr size_t kQ2ScalesAt = 1024, kQ2DAt = 1024 + 256, kQ2DminAt = 1024 + 288;

// Sub-block j's dots for U tokens (the sub-block's 16 activation bytes at a[u]): four chunks of
// levels (shift 2r, mask 3) per half, each met by every token's broadcast dword; the 16-bit sums
// then meet the rows' 4-bit scales sc[2] and add to sumi[u][2]. Per 128 MACs: 4 vpmaddubsw +
// 1 vpmaddwd (2.5 cycles on the two multiply pipes), 3 vpaddw + 1 vpaddd, and the sub-tile's
// share of the unpack; the multiply pipes bound prefill.
template <int U>
void q2_k_sub_block(const uint8_t* qj, const int8_t* const* a, const __m256i* sc,
                    __m256i (*sumi)[2]) {
  const __m256i three = _mm256_set1_epi8(3);
  __m256i s16[U][2];
  // Chunk r's products for every token; `add` false for the first chunk, which starts the sums.
  auto chunk = [&](int r, bool add) {
    __m256i w[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qj + h * 32));
      w[h] = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * r), three);
    }
    for (int u = 0; u < U; ++u) {
      const __m256i av = broadcast_dword(a[u] + 4 * r);
      for (int h = 0; h < 2; ++h) {
        const __m256i p = _mm256_maddubs_epi16(w[h], av);
        s16[u][h] = add ? _mm256_add_epi16(s16[u][h], p) : p;
      }
    }
  };
  chunk(0, false);
#pragma GCC unroll 1
  for (int r = 1; r < 4; ++r) chunk(r, true);
  for (int u = 0; u < U; ++u) {
    for (int h = 0; h < 2; ++h) sumi[u][h] = _mm256_add_epi32(sumi[u][h], _mm256_madd_epi16(s16[u][h], sc[h]));
  }
}

// Row l's scale/min bytes of sub-blocks 2p and 2p + 1 for one half (p * 32 + h * 16), as 16-bit
// pairs per dword: (byte 2p, byte 2p + 1).
__m256i q2_scale_bytes(const uint8_t* sb, int p, int h) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQ2ScalesAt + p * 32 + h * 16)));
}

// A tile of one Q2_Kx16 group against T Q8_K tokens (bsum pairs at pairs + t * 8 * nsb).
template <int T>
void q2_kx16_tile(const uint8_t* q, int64_t nsb, const std::byte* x, size_t x_row_bytes,
                  const int32_t* pairs, float* y, int64_t y_stride) {
  // vpshufb controls (byte indices within each 128-bit lane) that copy each dword's low (even
  // sub-block) or high (odd) 16-bit scale byte into both of its 16-bit halves.
  const __m256i dup_even = _mm256_setr_epi32(0x01000100, 0x05040504, 0x09080908, 0x0d0c0d0c,
                                             0x01000100, 0x05040504, 0x09080908, 0x0d0c0d0c);
  const __m256i dup_odd = _mm256_add_epi8(dup_even, _mm256_set1_epi8(2));
  const __m256i low4 = _mm256_set1_epi16(0x0f);
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* sb = q + s * kQ2_Kx16SuperBlockBytes;
    const BlockQ8_K* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes) + s;
    __m256i sumi[T][2];
    for (int t = 0; t < T; ++t) sumi[t][0] = sumi[t][1] = _mm256_setzero_si256();
    for (int j = 0; j < 16; ++j) {
      if (T <= 2) {  // the super-block's 21 lines, kPrefetchBytes ahead
        _mm_prefetch(reinterpret_cast<const char*>(sb + kPrefetchBytes + j * 64), _MM_HINT_T1);
        if (j < 5) _mm_prefetch(reinterpret_cast<const char*>(sb + kPrefetchBytes + (16 + j) * 64), _MM_HINT_T1);
      }
      __m256i sc[2];
      for (int h = 0; h < 2; ++h) {
        sc[h] = _mm256_and_si256(_mm256_shuffle_epi8(q2_scale_bytes(sb, j / 2, h), j % 2 == 0 ? dup_even : dup_odd), low4);
      }
      for_each_sub_tile<T>([&]<int U>(int t0) {
        const int8_t* as[U];
        for (int u = 0; u < U; ++u) as[u] = a[t0 + u]->qs + 16 * j;
        q2_k_sub_block<U>(sb + j * 64, as, sc, sumi + t0);
      });
    }
    // The mins (high nibbles): summ = sum_p (m_2p, m_2p+1) . (bsums[2p], bsums[2p + 1]).
    __m256i mins[8][2];
    for (int p = 0; p < 8; ++p) {
      for (int h = 0; h < 2; ++h) mins[p][h] = _mm256_srli_epi16(q2_scale_bytes(sb, p, h), 4);
    }
    const __m256 d[2] = {load_f16x8(sb + kQ2DAt), load_f16x8(sb + kQ2DAt + 16)};
    const __m256 dmin[2] = {load_f16x8(sb + kQ2DminAt), load_f16x8(sb + kQ2DminAt + 16)};
    for (int t = 0; t < T; ++t) {
      const int32_t* pr = pairs + (t * nsb + s) * 8;
      const __m256 da = _mm256_set1_ps(a[t]->d);
      for (int h = 0; h < 2; ++h) {
        __m256i summ = _mm256_madd_epi16(mins[0][h], _mm256_set1_epi32(pr[0]));
        for (int p = 1; p < 8; ++p) summ = _mm256_add_epi32(summ, _mm256_madd_epi16(mins[p][h], _mm256_set1_epi32(pr[p])));
        acc[t][h] = fold_super_block(acc[t][h], d[h], dmin[h], da, sumi[t][h], summ);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(y + t * y_stride + 8 * h, acc[t][h]);
  }
}

template <int T>
struct Q2_Kx16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q2_kx16_tile<T>(q, n / kQK_K, x, xrb, aux, y, ys);
  }
};

// --- Q6_Kx16 ----------------------------------------------------------------------------------

constexpr size_t kQ6ScalesAt = 3072, kQ6DAt = 3072 + 256;

// Sub-block j's four registers of 6-bit values for half h (planes at qj, packed_q6_k.h): three by
// mask 0x3f; the fourth from the planes' top bits, masked before their 16-bit shifts so no bit
// crosses into the next byte, or-ed at bits 2-7 and shifted down once (the high byte's bits 0-1
// are zero, so the shift brings nothing in). 11 ops per half.
void q6_values(const uint8_t* qj, int h, __m256i* w) {
  const __m256i low6 = _mm256_set1_epi8(0x3f);
  const __m256i top2 = _mm256_set1_epi8(static_cast<char>(0xc0));
  __m256i top[3];
  for (int p = 0; p < 3; ++p) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qj + p * 64 + h * 32));
    w[p] = _mm256_and_si256(raw, low6);
    top[p] = _mm256_and_si256(raw, top2);
  }
  const __m256i bits = _mm256_or_si256(_mm256_or_si256(top[0], _mm256_srli_epi16(top[1], 2)),
                                       _mm256_srli_epi16(top[2], 4));
  w[3] = _mm256_srli_epi16(bits, 2);
}

// Row l's int8 scales of sub-blocks 2p and 2p + 1 for one half (p * 32 + h * 16), sign-extended
// to 16-bit pairs per dword.
__m256i q6_scale_pairs(const uint8_t* sb, int p, int h) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + kQ6ScalesAt + p * 32 + h * 16)));
}

// A tile of one Q6_Kx16 group against T Q8_K tokens (bsum pairs at pairs + t * 8 * nsb). Per
// sub-block and half the values are rebuilt once for all T tokens; per token 4 vpmaddubsw (pair
// sums of at most 2 * 63 * 128 = 16128), summed two by two in 16 bits (32256 < 32767: four would
// not fit), meet the rows' scales in 2 vpmaddwd. The +32 offset: summ = sum_p (sc_2p, sc_2p+1) .
// (bsums[2p], bsums[2p + 1]) by vpmaddwd, isum = sumi - 32 summ. The decode prefetch measured
// faster (kernel_bench R2048xC5632 T1/cold, medians of 3, two rounds: 289-352 us against 637-639
// without; from cache no slower, 206-222 against 201-215).
template <int T>
void q6_kx16_tile(const uint8_t* q, int64_t nsb, const std::byte* x, size_t x_row_bytes,
                  const int32_t* pairs, float* y, int64_t y_stride) {
  // vpshufb controls (byte indices within each 128-bit lane) that copy each dword's low (even
  // sub-block) or high (odd) 16-bit scale into both of its 16-bit halves.
  const __m256i dup_even = _mm256_setr_epi32(0x01000100, 0x05040504, 0x09080908, 0x0d0c0d0c,
                                             0x01000100, 0x05040504, 0x09080908, 0x0d0c0d0c);
  const __m256i dup_odd = _mm256_add_epi8(dup_even, _mm256_set1_epi8(2));
  __m256 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* sb = q + s * kQ6_Kx16SuperBlockBytes;
    const BlockQ8_K* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes) + s;
    __m256i sumi[T][2];
    for (int t = 0; t < T; ++t) sumi[t][0] = sumi[t][1] = _mm256_setzero_si256();
    for (int j = 0; j < 16; ++j) {
      const uint8_t* qj = sb + j * 192;
      if (T <= 2) {  // the super-block's 53 lines (3 per sub-block, 5 more), kPrefetchBytes ahead
        for (int c = 0; c < 3; ++c) _mm_prefetch(reinterpret_cast<const char*>(qj + kPrefetchBytes + c * 64), _MM_HINT_T1);
        if (j < 5) _mm_prefetch(reinterpret_cast<const char*>(sb + kPrefetchBytes + (48 + j) * 64), _MM_HINT_T1);
      }
      __m256i w[2][4], sc[2];
      for (int h = 0; h < 2; ++h) {
        q6_values(qj, h, w[h]);
        sc[h] = _mm256_shuffle_epi8(q6_scale_pairs(sb, j / 2, h), j % 2 == 0 ? dup_even : dup_odd);
      }
      for (int t = 0; t < T; ++t) {
        const int8_t* aj = a[t]->qs + 16 * j;
        __m256i av[4];
        for (int r = 0; r < 4; ++r) av[r] = broadcast_dword(aj + 4 * r);
        for (int h = 0; h < 2; ++h) {
          const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(w[h][0], av[0]), _mm256_maddubs_epi16(w[h][1], av[1]));
          const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(w[h][2], av[2]), _mm256_maddubs_epi16(w[h][3], av[3]));
          sumi[t][h] = _mm256_add_epi32(sumi[t][h], _mm256_add_epi32(_mm256_madd_epi16(s01, sc[h]), _mm256_madd_epi16(s23, sc[h])));
        }
      }
    }
    for (int h = 0; h < 2; ++h) {
      __m256i scp[8];
      for (int p = 0; p < 8; ++p) scp[p] = q6_scale_pairs(sb, p, h);
      const __m256 d = load_f16x8(sb + kQ6DAt + 16 * h);
      for (int t = 0; t < T; ++t) {
        const int32_t* pr = pairs + (t * nsb + s) * 8;
        __m256i summ = _mm256_madd_epi16(scp[0], _mm256_set1_epi32(pr[0]));
        for (int p = 1; p < 8; ++p) summ = _mm256_add_epi32(summ, _mm256_madd_epi16(scp[p], _mm256_set1_epi32(pr[p])));
        const __m256i isum = _mm256_sub_epi32(sumi[t][h], _mm256_slli_epi32(summ, 5));
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(a[t]->d)), _mm256_cvtepi32_ps(isum), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(y + t * y_stride + 8 * h, acc[t][h]);
  }
}

template <int T>
struct Q6_Kx16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q6_kx16_tile<T>(q, n / kQK_K, x, xrb, aux, y, ys);
  }
};

}  // namespace

void q4_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, Q4_Kx16Tile>(groups, q4_kx16_group_bytes(n), n_groups, x, x_row_bytes, pairs,
                             4 * (n / kQK_K), n_tokens, y, y_stride, n);
}

void q2_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, Q2_Kx16Tile>(groups, q2_kx16_group_bytes(n), n_groups, x, x_row_bytes, pairs,
                             8 * (n / kQK_K), n_tokens, y, y_stride, n);
}

void q6_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, Q6_Kx16Tile>(groups, q6_kx16_group_bytes(n), n_groups, x, x_row_bytes, pairs,
                             8 * (n / kQK_K), n_tokens, y, y_stride, n);
}

}  // namespace tessera::kernels::avx2
