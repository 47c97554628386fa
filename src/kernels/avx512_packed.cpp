// AVX-512 kernels of the 16-row packed layouts (packed_q4_0.h, packed_legacy.h, packed_q8_0.h,
// packed_f16.h, packed_q4_k.h, packed_q2_k.h, packed_q6_k.h): one tile per layout over the shared
// group loop (x86_packed_groups.h), each bit-identical to its scalar reference. Split from
// avx512_kernels.cpp (the row kernels and the table's installation), compiled with the same flags
// and under the same two rules: no inline functions or templates shared with other translation
// units, and no contraction of vector mul/add.
#include "tessera/kernels/avx512_kernels.h"

// GCC 12 warns that the _mm512_undefined_* placeholders inside many AVX-512 intrinsics are
// used uninitialized: a false positive about the header's own code (GCC 13 no longer warns).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tessera/kernels/kquant_blocks.h"
#include "tessera/kernels/packed_f16.h"
#include "tessera/kernels/iquant_blocks.h"
#include "tessera/kernels/packed_q4_0.h"
#include "tessera/kernels/packed_legacy.h"
#include "tessera/kernels/packed_q2_k.h"
#include "tessera/kernels/packed_q4_k.h"
#include "tessera/kernels/packed_q6_k.h"
#include "tessera/kernels/packed_q8_0.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/scalar_kernels.h"
#include "tessera/kernels/x86_packed_groups.h"

namespace tessera::kernels {
namespace {

// How far ahead (bytes) a packed group's weights are prefetched (into L2; Q8_0 with the
// non-temporal hint, see q8_0x16_tile) when few tokens share them: decode streams the weights
// from DRAM, and one core's hardware prefetchers alone kept fewer requests in flight than the
// bandwidth needs. Measured on TinyLlama Q4_0 decode (tg64,
// 2 threads, alternating binaries): 45-46.5 tok/s with L2 prefetches 24 blocks (6.9 KB) ahead
// against 38-40.5 with L1 prefetches 16 blocks ahead; 8 blocks ahead was slower than none.
constexpr int kPackedPrefetchBytes = 12 * 576;

// A block's eight activation dwords (32 bytes at p), each broadcast to a register for vpdpbusd.
// From memory (vpbroadcastd m32, one load each) where several tokens share a tile: copying the
// bytes to an int32 array let GCC move them through general registers, a cross-domain move and
// a broadcast per dword; without that the 64-token kernel_bench shapes run 24% (Q4_0, Q4_K)
// and 6-42% (Q8_0) faster (docs/PERFORMANCE.md). Decode tiles (T <= 2) keep the copy: their
// loads stream weights from DRAM, and eight more loads per block measured slower decode end to
// end (Q8_0 tg32 0.85x).
template <bool kFromMemory>
struct BlockDwords {
  explicit BlockDwords(const int8_t* q) : p(q) {
    if constexpr (!kFromMemory) std::memcpy(v, q, sizeof v);
  }
  __m512i operator[](int c) const {
    if constexpr (kFromMemory) return _mm512_broadcastd_epi32(_mm_loadu_si32(p + 4 * c));
    else return _mm512_set1_epi32(v[c]);
  }
  const int8_t* p;
  int32_t v[8];
};

// A tile of one packed Q4_0x16 group (packed_q4_0.h) against T tokens: per block the group's
// four 64-byte quant chunks are split once into low nibbles (w & 0x0f) and high nibbles left in
// place (w & 0xf0, i.e. 16 x the nibble: one and instead of a shift and an and; the chain's sum
// is shifted back once per token) for all T tokens; per token each register meets 4 broadcast
// activation bytes in one vpdpbusd, so 8 give the block's 16 integer dots. The token's -8 * sum(a)
// and f32 scale come precomputed (q8_0_block_terms). One accumulator per token in lane order,
// blocks in order: the numerics of scalar::q4_0x16_q8_0_gemm exactly.
// kLevels (IQ4_NL in the same layout): each nibble is looked up instead (vpshufb of the 16 levels
// + 128, high nibbles shifted down first), the chain starts from -128 * sum(a) and nothing is
// shifted back: scalar::iq4_nlx16_q8_0_gemm exactly.
template <int T, bool kLevels = false>
void q4_0x16_tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
                  const int32_t* terms, float* y, int64_t y_stride) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0f);
  const __m512i hi_mask = _mm512_set1_epi8(static_cast<char>(0xf0));
  const __m512i levels = _mm512_broadcast_i32x4(_mm_add_epi8(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Levels)), _mm_set1_epi8(static_cast<char>(0x80))));
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + q4_0x16_quants_at(b);
    if (T <= 2) {  // the record's nine lines: five with its first block, four with its second
      const uint8_t* ahead = q + (b / 2) * 576 + kPackedPrefetchBytes;
      for (int c = (b % 2) * 5; c < (b % 2 == 0 ? 5 : 9); ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + c * 64), _MM_HINT_T1);
      }
    }
    __m512i lo[4], hi[4];
    for (int c = 0; c < 4; ++c) {
      const __m512i w = _mm512_loadu_si512(qb + c * 64);
      if constexpr (kLevels) {
        lo[c] = _mm512_shuffle_epi8(levels, _mm512_and_si512(w, lo_mask));
        hi[c] = _mm512_shuffle_epi8(levels, _mm512_and_si512(_mm512_srli_epi16(w, 4), lo_mask));
      } else {
        lo[c] = _mm512_and_si512(w, lo_mask);
        hi[c] = _mm512_and_si512(w, hi_mask);
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + q4_0x16_scales_at(b, nb))));
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes) + b;
      const int32_t* tb = terms + 2 * (t * nb + b);
      const BlockDwords<(T > 2)> aq(a->qs);
      float da;
      std::memcpy(&da, tb + 1, sizeof da);
      __m512i s0 = _mm512_set1_epi32(tb[0]);
      __m512i s1 = _mm512_setzero_si512();
      for (int c = 0; c < 4; ++c) {
        s0 = _mm512_dpbusd_epi32(s0, lo[c], aq[c]);
        s1 = _mm512_dpbusd_epi32(s1, hi[c], aq[4 + c]);
      }
      const __m512i dot = _mm512_add_epi32(s0, kLevels ? s1 : _mm512_srai_epi32(s1, 4));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da)), _mm512_cvtepi32_ps(dot), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

// A tile of one packed Q4_1x16 / Q5_0x16 / Q5_1x16 group (packed_legacy.h) against T tokens: the
// nibbles as in q4_0x16_tile; with fifth bits the high nibbles are shifted down instead and each
// chunk's mask adds 16 to the bytes whose level has it (one masked byte add). The chain starts
// from the token's -16 * sum(a) (Q5_0) or zero; with minimums a second fma per token adds
// m_w * d_x * sum(a): the numerics of the scalar references exactly.
template <int T, LegacyX16 F>
void legacy_x16_tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
                     const int32_t* terms, float* y, int64_t y_stride) {
  const __m512i lo_mask = _mm512_set1_epi8(0x0f);
  const __m512i hi_mask = _mm512_set1_epi8(static_cast<char>(0xf0));
  const __m512i fifth = _mm512_set1_epi8(0x10);
  constexpr size_t kRecord = 2 * F.block_bytes();
  constexpr int kLines = static_cast<int>((kRecord + 63) / 64), kFirst = (kLines + 1) / 2;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + legacy_x16_quants_at(F, b);
    if (T <= 2) {  // the record's lines, about half with each block
      const uint8_t* ahead = q + (b / 2) * kRecord + kPackedPrefetchBytes;
      for (int c = b % 2 == 0 ? 0 : kFirst; c < (b % 2 == 0 ? kFirst : kLines); ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + c * 64), _MM_HINT_T1);
      }
    }
    __m512i lo[4], hi[4];
    for (int c = 0; c < 4; ++c) {
      const __m512i w = _mm512_loadu_si512(qb + c * 64);
      lo[c] = _mm512_and_si512(w, lo_mask);
      if constexpr (F.five_bits) {
        const uint8_t* bits = q + legacy_x16_bits_at(F, b, nb);
        uint64_t mlo, mhi;
        std::memcpy(&mlo, bits + 8 * c, 8);
        std::memcpy(&mhi, bits + 8 * (4 + c), 8);
        hi[c] = _mm512_and_si512(_mm512_srli_epi16(w, 4), lo_mask);
        lo[c] = _mm512_mask_add_epi8(lo[c], _cvtu64_mask64(mlo), lo[c], fifth);
        hi[c] = _mm512_mask_add_epi8(hi[c], _cvtu64_mask64(mhi), hi[c], fifth);
      } else {
        hi[c] = _mm512_and_si512(w, hi_mask);
      }
    }
    const uint8_t* sc = q + legacy_x16_scales_at(F, b, nb);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc)));
    __m512 mw = _mm512_setzero_ps();
    if constexpr (F.has_min) mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 32)));
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes) + b;
      const int32_t* tb = terms + 2 * (t * nb + b);
      const BlockDwords<(T > 2)> aq(a->qs);
      float da;
      std::memcpy(&da, tb + 1, sizeof da);
      __m512i s0 = F.has_min ? _mm512_setzero_si512() : _mm512_set1_epi32(tb[0]);
      __m512i s1 = _mm512_setzero_si512();
      for (int c = 0; c < 4; ++c) {
        s0 = _mm512_dpbusd_epi32(s0, lo[c], aq[c]);
        s1 = _mm512_dpbusd_epi32(s1, hi[c], aq[4 + c]);
      }
      const __m512i dot = _mm512_add_epi32(s0, F.five_bits ? s1 : _mm512_srai_epi32(s1, 4));
      const __m512 vda = _mm512_set1_ps(da);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, vda), _mm512_cvtepi32_ps(dot), acc[t]);
      if constexpr (F.has_min) {
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(mw, vda), _mm512_set1_ps(static_cast<float>(tb[0])), acc[t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

// A tile of one packed Q8_0x16 group (packed_q8_0.h) against T tokens: per block the group's
// eight 64-byte quant chunks (weights + 128) are loaded once for all T tokens; per token 8
// vpdpbusd against broadcast activation bytes, starting at the token's -128 * sum(a), give the
// block's 16 exact integer dots. The numerics of scalar::q8_0x16_q8_0_gemm exactly.
template <int T>
void q8_0x16_tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
                  const int32_t* terms, float* y, int64_t y_stride) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + q8_0x16_quants_at(b);
    // The record's 17 lines: nine with its first block, eight with its second. With the
    // non-temporal hint, unlike the other tiles' L2 (T1) prefetches: on TinyLlama Q8_0 decode
    // the T1 version took 1.05-1.24x the NTA version's time (medians, 3.5-13.8 KB ahead,
    // docs/PERFORMANCE.md "Changes measured"); Q4_0, Q4_K and an F16 prefetch measured neutral
    // or slower with NTA.
    if (T <= 2) {
      const uint8_t* ahead = q + (b / 2) * 1088 + kPackedPrefetchBytes;
      for (int c = (b % 2) * 9; c < (b % 2 == 0 ? 9 : 17); ++c) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + c * 64), _MM_HINT_NTA);
      }
    }
    __m512i w[8];
    for (int c = 0; c < 8; ++c) w[c] = _mm512_loadu_si512(qb + c * 64);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + q8_0x16_scales_at(b, nb))));
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0* a = reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes) + b;
      const int32_t* tb = terms + 2 * (t * nb + b);
      const BlockDwords<(T > 2)> aq(a->qs);
      float da;
      std::memcpy(&da, tb + 1, sizeof da);
      __m512i s0 = _mm512_set1_epi32(tb[0]);
      __m512i s1 = _mm512_setzero_si512();
      for (int c = 0; c < 8; c += 2) {
        s0 = _mm512_dpbusd_epi32(s0, w[c], aq[c]);
        s1 = _mm512_dpbusd_epi32(s1, w[c + 1], aq[c + 1]);
      }
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(da)),
                               _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

// A tile of one packed F16x16 group (packed_f16.h) against T f32 tokens: per column one
// conversion gives 16 rows' weights, met by each token's broadcast x[k] in one FMA into the
// token's accumulator k % 2. The numerics of scalar::f16x16_f32_gemm exactly.
template <int T, bool kInterleaved = false>
void f16x16_tile(const uint8_t* q, int64_t n, const std::byte* x, size_t x_row_bytes, float* y,
                 int64_t y_stride) {
  __m512 acc[T][2];
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
  const float* xt[T];
  for (int t = 0; t < T; ++t) xt[t] = reinterpret_cast<const float*>(x + t * x_row_bytes);
  // No software prefetch, unlike the quantized decode tiles: a group is one contiguous stream
  // with little arithmetic per line, which the hardware prefetchers keep up with; prefetching
  // 6.9 KB ahead made TinyLlama F16 decode ~7% slower (docs/PERFORMANCE.md, "Changes measured").
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    for (int j = 0; j < 4; ++j) {
      const __m512 w = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (k + j) * 32)));
      for (int t = 0; t < T; ++t) {
        const float xv = kInterleaved ? xt[0][k * T + t * 4 + j] : xt[t][k + j];
        acc[t][j & 1] = _mm512_fmadd_ps(w, _mm512_set1_ps(xv), acc[t][j & 1]);
      }
    }
  }
  for (; k < n; ++k) {
    const __m512 w = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + k * 32)));
    for (int t = 0; t < T; ++t) {
      const float xv = kInterleaved ? xt[0][(n & ~int64_t{3}) * T + t * (n & 3) + (k & 3)] : xt[t][k];
      acc[t][k % 2] = _mm512_fmadd_ps(w, _mm512_set1_ps(xv), acc[t][k % 2]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, _mm512_add_ps(acc[t][0], acc[t][1]));
}

// A tile of one packed Q4_Kx16 group (packed_q4_k.h) against T Q8_K tokens. Per sub-block the
// group's eight 64-byte quant registers are unpacked once (low or high nibbles) for all T tokens;
// per token 8 vpdpbusd give the sub-block's 16 integer dots, one vpmulld applies the lanes'
// 6-bit scales, and per super-block 4 vpdpwssd fold the mins against the token's bsums. Exactly
// the numerics of scalar::q4_kx16_q8_k_gemm.
template <int T>
void q4_kx16_tile(const uint8_t* q, int64_t nsb, const std::byte* x, size_t x_row_bytes,
                  const int32_t* pairs, float* y, int64_t y_stride) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* sb = q + s * kQ4_Kx16SuperBlockBytes;
    __m512i sumi[T];
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {  // sub-block j: chunk k = j / 2, low nibbles when j is even
      if (T <= 2) {  // the super-block's 37 lines, 5 per sub-block, kPackedPrefetchBytes ahead
        for (int c = 0; c < 5 && j * 5 + c < 37; ++c) {
          _mm_prefetch(reinterpret_cast<const char*>(sb + kPackedPrefetchBytes + (j * 5 + c) * 64), _MM_HINT_T1);
        }
      }
      const uint8_t* qk = sb + (j / 2) * 512;
      __m512i w[8];
      for (int c = 0; c < 8; ++c) {
        const __m512i raw = _mm512_loadu_si512(qk + c * 64);
        w[c] = _mm512_and_si512(j % 2 == 0 ? raw : _mm512_srli_epi16(raw, 4), mask);
      }
      const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + 2048 + j * 16)));
      const int a_off = 64 * (j / 2) + 32 * (j % 2);
      for (int t = 0; t < T; ++t) {
        const BlockQ8_K* a = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes) + s;
        const BlockDwords<(T > 2)> aq(a->qs + a_off);
        __m512i d0 = _mm512_setzero_si512(), d1 = _mm512_setzero_si512();
        for (int c = 0; c < 8; c += 2) {
          d0 = _mm512_dpbusd_epi32(d0, w[c], aq[c]);
          d1 = _mm512_dpbusd_epi32(d1, w[c + 1], aq[c + 1]);
        }
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(_mm512_add_epi32(d0, d1), sc));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 2048 + 256)));
    const __m512 dmw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 2048 + 288)));
    for (int t = 0; t < T; ++t) {
      const BlockQ8_K* a = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes) + s;
      const int32_t* pr = pairs + (t * nsb + s) * 4;
      __m512i summ = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) {
        const __m512i m = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 2048 + 128 + p * 32)));
        summ = _mm512_dpwssd_epi32(summ, m, _mm512_set1_epi32(pr[p]));
      }
      const __m512 da = _mm512_set1_ps(a->d);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, da), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmw, da), _mm512_cvtepi32_ps(summ), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

// A tile of one packed Q2_Kx16 group (packed_q2_k.h) against T Q8_K tokens. Per sub-block the
// group's 64 quant bytes are split once into four registers of levels (shift 2r, mask 3) for all
// T tokens; per token 4 vpdpbusd against broadcast activation dwords give the sub-block's 16
// integer dots (|dot| <= 6144, an int16), one vpdpwssd against the lanes' 4-bit scales (zero
// high halves) adds sc_j * dot_j, and per super-block 8 vpdpwssd fold the mins against the
// token's bsum pairs. Exactly the numerics of scalar::q2_kx16_q8_k_gemm.
template <int T>
void q2_kx16_tile(const uint8_t* q, int64_t nsb, const std::byte* x, size_t x_row_bytes,
                  const int32_t* pairs, float* y, int64_t y_stride) {
  const __m512i three = _mm512_set1_epi8(3);
  const __m512i low4 = _mm512_set1_epi32(0x0f);
  const __m512i min4 = _mm512_set1_epi16(0x0f);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* sb = q + s * kQ2_Kx16SuperBlockBytes;
    __m512i sumi[T];
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
    for (int j = 0; j < 16; ++j) {
      if (T <= 2) {  // the super-block's 21 lines, kPackedPrefetchBytes ahead
        _mm_prefetch(reinterpret_cast<const char*>(sb + kPackedPrefetchBytes + j * 64), _MM_HINT_T1);
        if (j < 5) _mm_prefetch(reinterpret_cast<const char*>(sb + kPackedPrefetchBytes + (16 + j) * 64), _MM_HINT_T1);
      }
      const __m512i raw = _mm512_loadu_si512(sb + j * 64);
      __m512i w[4];
      for (int r = 0; r < 4; ++r) w[r] = _mm512_and_si512(_mm512_srli_epi16(raw, 2 * r), three);
      const __m512i sp = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 1024 + (j / 2) * 32)));
      const __m512i sc = _mm512_and_si512(j % 2 == 0 ? sp : _mm512_srli_epi32(sp, 16), low4);
      for (int t = 0; t < T; ++t) {
        const int8_t* a = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes)[s].qs + 16 * j;
        __m512i dot = _mm512_setzero_si512();
        for (int r = 0; r < 4; ++r) {
          int32_t a4;
          std::memcpy(&a4, a + 4 * r, 4);
          dot = _mm512_dpbusd_epi32(dot, w[r], _mm512_set1_epi32(a4));
        }
        sumi[t] = _mm512_dpwssd_epi32(sumi[t], dot, sc);
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 1024 + 256)));
    const __m512 dmw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 1024 + 288)));
    __m512i mins[8];
    for (int p = 0; p < 8; ++p) {
      const __m512i sp = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 1024 + p * 32)));
      mins[p] = _mm512_and_si512(_mm512_srli_epi16(sp, 4), min4);
    }
    for (int t = 0; t < T; ++t) {
      const float da = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes)[s].d;
      const int32_t* pr = pairs + (t * nsb + s) * 8;
      __m512i summ = _mm512_setzero_si512();
      for (int p = 0; p < 8; ++p) summ = _mm512_dpwssd_epi32(summ, mins[p], _mm512_set1_epi32(pr[p]));
      const __m512 vda = _mm512_set1_ps(da);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, vda), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmw, vda), _mm512_cvtepi32_ps(summ), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

// A tile of one packed Q6_Kx16 group (packed_q6_k.h) against T Q8_K tokens. Per sub-block the
// group's three 192-byte planes are split once for all T tokens into four registers of 6-bit
// values: three by mask 0x3f, the fourth from the planes' top bits (two shifts, two vpternlogd
// selects, a shift and a mask). Per token 4 vpdpbusd against broadcast activation dwords give the
// sub-block's 16 integer dots (|dot| <= 129024: past int16, so no vpdpwssd), one vpmulld by the
// lanes' sign-extended scales and a vpaddd add sc_j * dot_j; per super-block 8 vpdpwssd fold the
// +32 offset against the token's bsum pairs. Exactly the numerics of scalar::q6_kx16_q8_k_gemm.
// The decode prefetch measured faster from DRAM (kernel_bench R2048xC5632 T1/cold, Zen 5 VM, medians
// of 3, two rounds: 327-434 us against 496-503 without) though slower from cache (T1: 206-212
// against 158-160); decode streams its weights from DRAM.
template <int T>
void q6_kx16_tile(const uint8_t* q, int64_t nsb, const std::byte* x, size_t x_row_bytes,
                  const int32_t* pairs, float* y, int64_t y_stride) {
  const __m512i low6 = _mm512_set1_epi8(0x3f);
  const __m512i top2 = _mm512_set1_epi8(static_cast<char>(0xc0));
  const __m512i top4 = _mm512_set1_epi8(static_cast<char>(0xf0));
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    const uint8_t* sb = q + s * kQ6_Kx16SuperBlockBytes;
    const BlockQ8_K* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes) + s;
    __m512i sumi[T];
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
    for (int j = 0; j < 16; ++j) {
      const uint8_t* qj = sb + j * 192;
      if (T <= 2) {  // its 53 lines (3 per sub-block, 5 more), kPackedPrefetchBytes ahead
        for (int c = 0; c < 3; ++c) _mm_prefetch(reinterpret_cast<const char*>(qj + kPackedPrefetchBytes + c * 64), _MM_HINT_T1);
        if (j < 5) _mm_prefetch(reinterpret_cast<const char*>(sb + kPackedPrefetchBytes + (48 + j) * 64), _MM_HINT_T1);
      }
      __m512i w[4];
      __m512i raw[3];
      for (int p = 0; p < 3; ++p) {
        raw[p] = _mm512_loadu_si512(qj + p * 64);
        w[p] = _mm512_and_si512(raw[p], low6);
      }
      // Value bits 4-5 (plane 0's top bits) at 6-7, bits 2-3 (plane 1's, shifted 2) at 4-5, bits
      // 0-1 (plane 2's, shifted 4) at 2-3: 0xe4 picks the first operand where the mask is set.
      const __m512i hi = _mm512_ternarylogic_epi32(raw[0], _mm512_srli_epi16(raw[1], 2), top2, 0xe4);
      const __m512i all = _mm512_ternarylogic_epi32(hi, _mm512_srli_epi16(raw[2], 4), top4, 0xe4);
      w[3] = _mm512_and_si512(_mm512_srli_epi16(all, 2), low6);
      const __m512i sp = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 3072 + (j / 2) * 32)));
      const __m512i sc = j % 2 == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(sp, 16), 16) : _mm512_srai_epi32(sp, 16);
      for (int t = 0; t < T; ++t) {
        const int8_t* aj = a[t]->qs + 16 * j;
        __m512i dot = _mm512_setzero_si512();
        for (int r = 0; r < 4; ++r) {
          __m512i av;
          if constexpr (T > 2) {
            av = _mm512_broadcastd_epi32(_mm_loadu_si32(aj + 4 * r));
          } else {
            int32_t a4;
            std::memcpy(&a4, aj + 4 * r, 4);
            av = _mm512_set1_epi32(a4);
          }
          dot = _mm512_dpbusd_epi32(dot, w[r], av);
        }
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot, sc));
      }
    }
    // The offset: summ = sum_p (sc_2p, sc_2p+1) . (bsums[2p], bsums[2p + 1]); isum = sumi - 32 summ.
    __m512i scp[8];
    for (int p = 0; p < 8; ++p) {
      scp[p] = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 3072 + p * 32)));
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 3072 + 256)));
    for (int t = 0; t < T; ++t) {
      const int32_t* pr = pairs + (t * nsb + s) * 8;
      __m512i summ = _mm512_setzero_si512();
      for (int p = 0; p < 8; ++p) summ = _mm512_dpwssd_epi32(summ, scp[p], _mm512_set1_epi32(pr[p]));
      const __m512i isum = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(summ, 5));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(a[t]->d)), _mm512_cvtepi32_ps(isum), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

// The group kernels' tiles behind one signature: Tile<T>::run(group, n_cols, T tokens' rows,
// their row stride, their per-token terms, outputs, output stride).
template <int T>
struct Q4_0x16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q4_0x16_tile<T>(q, n / kQK4_0, x, xrb, aux, y, ys);
  }
};
template <int T>
struct IQ4_NLx16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q4_0x16_tile<T, true>(q, n / kQK4_0, x, xrb, aux, y, ys);
  }
};
template <LegacyX16 F>
struct LegacyX16Tile {
  template <int T>
  struct Of {
    static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb,
                    const int32_t* aux, float* y, int64_t ys) {
      legacy_x16_tile<T, F>(q, n / kQK4_0, x, xrb, aux, y, ys);
    }
  };
};
template <int T>
struct Q2_Kx16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q2_kx16_tile<T>(q, n / kQK_K, x, xrb, aux, y, ys);
  }
};
template <int T>
struct Q6_Kx16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q6_kx16_tile<T>(q, n / kQK_K, x, xrb, aux, y, ys);
  }
};
template <int T>
struct Q8_0x16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q8_0x16_tile<T>(q, n / kQK8_0, x, xrb, aux, y, ys);
  }
};
template <int T>
struct Q4_Kx16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    q4_kx16_tile<T>(q, n / kQK_K, x, xrb, aux, y, ys);
  }
};
template <int T>
struct F16x16Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t*,
                  float* y, int64_t ys) {
    f16x16_tile<T>(q, n, x, xrb, y, ys);
  }
};
// The same over a tile's activations interleaved in four-column chunks (f16x16_f32_gemm).
template <int T>
struct F16x16InterleavedTile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t, const int32_t*,
                  float* y, int64_t ys) {
    f16x16_tile<T, true>(q, n, x, 0, y, ys);
  }
};

}  // namespace

namespace avx512 {

void q4_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, Q4_0x16Tile>(groups, q4_0x16_group_bytes(n), n_groups, x, x_row_bytes, terms,
                             2 * (n / kQK4_0), n_tokens, y, y_stride, n);
}

void iq4_nlx16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                         const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                         int64_t n) {
  run_groups<8, IQ4_NLx16Tile>(groups, q4_0x16_group_bytes(n), n_groups, x, x_row_bytes, terms,
                               2 * (n / kQK4_0), n_tokens, y, y_stride, n);
}

void q4_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, LegacyX16Tile<kQ4_1x16>::Of>(groups, q4_1x16_group_bytes(n), n_groups, x,
                                             x_row_bytes, terms, 2 * (n / kQK4_0), n_tokens, y,
                                             y_stride, n);
}

void q5_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, LegacyX16Tile<kQ5_0x16>::Of>(groups, q5_0x16_group_bytes(n), n_groups, x,
                                             x_row_bytes, terms, 2 * (n / kQK4_0), n_tokens, y,
                                             y_stride, n);
}

void q5_1x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, LegacyX16Tile<kQ5_1x16>::Of>(groups, q5_1x16_group_bytes(n), n_groups, x,
                                             x_row_bytes, terms, 2 * (n / kQK4_0), n_tokens, y,
                                             y_stride, n);
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

void q4_kx16_q8_k_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* pairs, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, Q4_Kx16Tile>(groups, q4_kx16_group_bytes(n), n_groups, x, x_row_bytes, pairs,
                             4 * (n / kQK_K), n_tokens, y, y_stride, n);
}

void q8_0x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                       const int32_t* terms, int64_t n_tokens, float* y, int64_t y_stride,
                       int64_t n) {
  run_groups<8, Q8_0x16Tile>(groups, q8_0x16_group_bytes(n), n_groups, x, x_row_bytes, terms,
                             2 * (n / kQK8_0), n_tokens, y, y_stride, n);
}

void f16x16_f32_gemm(const void* groups, int64_t n_groups, const void* x, size_t x_row_bytes,
                     const int32_t* /*terms*/, int64_t n_tokens, float* y, int64_t y_stride,
                     int64_t n) {
  if (n_tokens < 2) {
    run_groups<6, F16x16Tile>(groups, f16x16_group_bytes(n), n_groups, x, x_row_bytes, nullptr, 0,
                              n_tokens, y, y_stride, n);
    return;
  }
  // Tokens in blocks of kBlock, each block's tiles interleaved once in chunks of four columns
  // (the tile's T tokens' x[k..k+3] side by side, 16 bytes each; the n % 4 last columns likewise
  // with n % 4 per token), so an iteration's 4 x T broadcasts come from T x 16 contiguous bytes
  // instead of one row per token (rows of a long input, 6 x 22 KB for a 5632-wide FFN down
  // projection, do not stay in L1), and interleaving is one 16-byte copy per token and chunk (a
  // float at a time, it took 5.7% of SmolLM2 prefill). Within a block each group meets every
  // tile while it sits in L2; a block bounds the per-thread buffer (kBlock x n).
  constexpr int64_t kTile = 6, kBlock = 8 * kTile;
  thread_local std::vector<float> xi;
  xi.resize(static_cast<size_t>(std::min(n_tokens, kBlock) * n));
  const auto* xb = static_cast<const std::byte*>(x);
  const size_t gb = f16x16_group_bytes(n);
  const int64_t n4 = n & ~int64_t{3};  // columns in whole four-column chunks
  for (int64_t b0 = 0; b0 < n_tokens; b0 += kBlock) {
    const int64_t b1 = std::min(n_tokens, b0 + kBlock);
    for (int64_t t0 = b0; t0 < b1; t0 += kTile) {
      const int64_t T = std::min(kTile, b1 - t0);
      float* dst = xi.data() + (t0 - b0) * n;
      for (int64_t t = 0; t < T; ++t) {
        const float* src = reinterpret_cast<const float*>(xb + (t0 + t) * x_row_bytes);
        for (int64_t k = 0; k < n4; k += 4) {
          _mm_storeu_ps(dst + k * T + t * 4, _mm_loadu_ps(src + k));
        }
        for (int64_t k = n4; k < n; ++k) dst[n4 * T + t * (n - n4) + (k - n4)] = src[k];
      }
    }
    for (int64_t g = 0; g < n_groups; ++g) {
      const auto* q = static_cast<const uint8_t*>(groups) + g * gb;
      for (int64_t t0 = b0; t0 < b1; t0 += kTile) {
        const auto* xt = reinterpret_cast<const std::byte*>(xi.data() + (t0 - b0) * n);
        float* yt = y + g * 16 + t0 * y_stride;
        run_remainder<F16x16InterleavedTile, kTile>(std::min(kTile, b1 - t0), q, n, xt, 0,
                                                     nullptr, yt, y_stride);
      }
    }
  }
}

}  // namespace avx512
}  // namespace tessera::kernels
