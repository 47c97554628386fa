// The AVX2 Q8_0_2of4x16 gather kernel (packed_q8_0_2of4.h): bit for bit the scalar reference.
//
// As the AVX-512 VBMI kernel it gathers the activations instead of expanding the weights, but
// without vpermb: chunk c's kept values (4 per row) meet activation bytes 8c .. 8c + 7 only, so
// those 8 bytes broadcast to every 64-bit lane and one vpshufb (indices 0..7, within 128-bit
// lanes) gathers what 8 rows x 4 kept values need. The indices, 4 * (j / 2) + code, come from
// the codes once per block and half-group for all the tile's tokens (chunk_indices). The products are signed x signed, so they
// go through the sign trick, vpmaddubsw(|w|, sign(a, w)), exact for any kept byte and activations
// in [-127, 127] (avx2_packed.h); the chain starts at zero: sum (w + 128) a - 128 sum a = sum w a.
//
// Per token and half-block (8 rows x 16 kept values): 4 x (broadcast load, vpshufb, vpsignb,
// vpmaddubsw, vpmaddwd, add) + 3 float steps, about 60% of dense Q8_0x16's 36 for 8 x 32 weights.
// Decode reads 22 bytes per row and block against dense Q8_0's 34 (0.65x), the bound it aims at.
#include <immintrin.h>

#include <cstring>

#include "tessera/kernels/avx2_packed.h"
#include "tessera/kernels/packed_q8_0_2of4.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/x86_packed_groups.h"

namespace tessera::kernels {
namespace {

// Decode tiles prefetch the group this far ahead with the non-temporal hint, as the AVX-512
// kernel (avx512vbmi_sparse_packed.cpp) measured best.
constexpr size_t kPrefetchBytes = 20 * 704;

// vpshufb indices of the four chunks for 8 rows (`codes`: dword l = row l, byte c = chunk c's
// four 2-bit codes): byte j of row l's dword in chunk c's register is 4 (j / 2) + code. Each code
// byte's nibbles are looked up once (vpshufb: field j of the nibble, + 4 for the high nibble's),
// giving byte (l, c) of four registers, one per j; a byte, word and dword transpose within each
// 128-bit lane (16 unpacks) regroups them by chunk. 23 operations per 8 rows and block, against
// 40 shifting each chunk's fields into place.
void chunk_indices(__m256i codes, __m256i idx[4]) {
  const __m256i nib = _mm256_set1_epi8(0x0f);
  const __m256i lo = _mm256_and_si256(codes, nib), hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), nib);
  const __m256i low2 = _mm256_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3,
                                        0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
  const __m256i high2 = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                         0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m256i four = _mm256_set1_epi8(4);
  const __m256i e0 = _mm256_shuffle_epi8(low2, lo), e1 = _mm256_shuffle_epi8(high2, lo);
  const __m256i e2 = _mm256_shuffle_epi8(_mm256_add_epi8(low2, four), hi);
  const __m256i e3 = _mm256_shuffle_epi8(_mm256_add_epi8(high2, four), hi);
  // Per 128-bit lane (rows l0..l3): words (j0, j1) and (j2, j3) per (row, chunk), then dwords
  // (row, chunk) with bytes j0..j3, then dwords regrouped by chunk.
  const __m256i a01 = _mm256_unpacklo_epi8(e0, e1), b01 = _mm256_unpackhi_epi8(e0, e1);
  const __m256i a23 = _mm256_unpacklo_epi8(e2, e3), b23 = _mm256_unpackhi_epi8(e2, e3);
  const __m256i r0 = _mm256_unpacklo_epi16(a01, a23), r1 = _mm256_unpackhi_epi16(a01, a23);
  const __m256i r2 = _mm256_unpacklo_epi16(b01, b23), r3 = _mm256_unpackhi_epi16(b01, b23);
  const __m256i p0 = _mm256_unpacklo_epi32(r0, r1), p1 = _mm256_unpackhi_epi32(r0, r1);
  const __m256i p2 = _mm256_unpacklo_epi32(r2, r3), p3 = _mm256_unpackhi_epi32(r2, r3);
  idx[0] = _mm256_unpacklo_epi64(p0, p2);
  idx[1] = _mm256_unpackhi_epi64(p0, p2);
  idx[2] = _mm256_unpacklo_epi64(p1, p3);
  idx[3] = _mm256_unpackhi_epi64(p1, p3);
}

// Both 8-row halves of one group against T tokens, chunk by chunk: a chunk's indices and weights
// are made once for all the tokens, whose integer sums stay in registers.
template <int T>
void tile(const uint8_t* q, int64_t nb, const std::byte* x, size_t x_row_bytes,
          const int32_t* terms, float* y, int64_t y_stride) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[T][2];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = q + q8_0_2of4x16_quants_at(b);
    if constexpr (T <= 2) {  // a block's 352 bytes, 64 apart
      const uint8_t* ahead = q + b * 352 + kPrefetchBytes;
      for (int off = 0; off < 352; off += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_NTA);
    }
    const uint8_t* codes_at = q + q8_0_2of4x16_codes_at(b, nb);
    __m256i idx[2][4];
    chunk_indices(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes_at)), idx[0]);
    chunk_indices(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes_at + 32)), idx[1]);
    __m256i dot[T][2];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m256i w[2], wabs[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        w[h] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + c * 64 + h * 32)), flip);
        wabs[h] = _mm256_abs_epi8(w[h]);
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        int64_t eight;
        std::memcpy(&eight, reinterpret_cast<const BlockQ8_0*>(x + t * x_row_bytes)[b].qs + 8 * c, sizeof eight);
        const __m256i a8 = _mm256_set1_epi64x(eight);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m256i g = _mm256_shuffle_epi8(a8, idx[h][c]);
          const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs[h], _mm256_sign_epi8(g, w[h])), ones);
          dot[t][h] = c == 0 ? p : _mm256_add_epi32(dot[t][h], p);
        }
      }
    }
    const uint8_t* sc = q + q8_0_2of4x16_scales_at(b, nb);
    const __m256 dw[2] = {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc))),
                          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16)))};
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      float da;
      std::memcpy(&da, terms + 2 * (t * nb + b) + 1, sizeof da);
      const __m256 vda = _mm256_set1_ps(da);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw[h], vda), _mm256_cvtepi32_ps(dot[t][h]), acc[t][h]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(y + t * y_stride, acc[t][0]);
    _mm256_storeu_ps(y + t * y_stride + 8, acc[t][1]);
  }
}

template <int T>
struct Tile {
  static void run(const uint8_t* q, int64_t n, const std::byte* x, size_t xrb, const int32_t* aux,
                  float* y, int64_t ys) {
    tile<T>(q, n / 32, x, xrb, aux, y, ys);
  }
};

}  // namespace

namespace avx2 {

void q8_0_2of4x16_q8_0_gemm(const void* groups, int64_t n_groups, const void* x,
                            size_t x_row_bytes, const int32_t* terms, int64_t n_tokens, float* y,
                            int64_t y_stride, int64_t n) {
  run_groups<6, Tile>(groups, q8_0_2of4x16_group_bytes(n), n_groups, x, x_row_bytes, terms,
                      2 * (n / 32), n_tokens, y, y_stride, n);
}

}  // namespace avx2
}  // namespace tessera::kernels
