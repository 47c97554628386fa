#include "tessera/kernels/gemm_bf16.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tessera/base/check.h"
#include "tessera/kernels/blocked_gemm.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

// f32 bits to bf16 bits exactly as half.h's f32_to_bf16 (nearest even; a NaN stays a quiet NaN),
// without a branch, so the packing loops below vectorize.
inline uint32_t bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t nan = (x >> 16) | 0x40u;
  return (x & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
}

inline uint32_t bf16_at(const Bf16Operand& o, int64_t r, int64_t c) {
  const int64_t at = r * o.row_stride + c * o.col_stride;
  return o.bf16 != nullptr ? o.bf16[at] : bf16_bits(o.f32[at]);
}

// words[q] = bf16(src[2q]) | bf16(src[2q+1]) << 16 for q < kc / 2, and the last value of an odd
// kc alone in the low half: one contiguous run of an operand's row as pair words.
template <typename S>
[[gnu::always_inline]] inline void row_to_pairs_body(const S* src, int64_t kc, uint32_t* words) {
  const int64_t full = kc / 2;
  if constexpr (std::is_same_v<S, float>) {
    for (int64_t q = 0; q < full; ++q) {
      words[q] = bf16_bits(src[2 * q]) | bf16_bits(src[2 * q + 1]) << 16;
    }
    if (kc & 1) words[full] = bf16_bits(src[2 * full]);
  } else {
    for (int64_t q = 0; q < full; ++q) {
      words[q] = src[2 * q] | static_cast<uint32_t>(src[2 * q + 1]) << 16;
    }
    if (kc & 1) words[full] = src[2 * full];
  }
}

// d[i] = bf16(lo[i]) | bf16(hi[i]) << 16 for i < rows (hi null: the high halves zero): a pair of
// an operand's columns, each contiguous down the rows.
template <typename S>
[[gnu::always_inline]] inline void columns_to_pairs_body(const S* lo, const S* hi, int64_t rows,
                                                         uint32_t* d) {
  auto bits = [](S v) -> uint32_t {
    if constexpr (std::is_same_v<S, float>) {
      return bf16_bits(v);
    } else {
      return v;
    }
  };
  if (hi == nullptr) {
    for (int64_t i = 0; i < rows; ++i) d[i] = bits(lo[i]);
    return;
  }
  for (int64_t i = 0; i < rows; ++i) d[i] = bits(lo[i]) | bits(hi[i]) << 16;
}

// Each loop twice: for baseline x86-64, and for AVX-512 where the bf16 GEMM's SIMD row runs (a
// CPU with avx512_bf16 has avx512bw). Integer operations only: the same bits either way.
template <typename S>
void row_to_pairs(const S* src, int64_t kc, uint32_t* words) {
  row_to_pairs_body(src, kc, words);
}
template <typename S>
void columns_to_pairs(const S* lo, const S* hi, int64_t rows, uint32_t* d) {
  columns_to_pairs_body(lo, hi, rows, d);
}
template <typename S>
[[gnu::target("avx512f,avx512bw,avx512vl")]] void row_to_pairs_wide(const S* src, int64_t kc,
                                                                     uint32_t* words) {
  row_to_pairs_body(src, kc, words);
}
template <typename S>
[[gnu::target("avx512f,avx512bw,avx512vl")]] void columns_to_pairs_wide(const S* lo, const S* hi,
                                                                         int64_t rows,
                                                                         uint32_t* d) {
  columns_to_pairs_body(lo, hi, rows, d);
}

// Packs rows [r0, r0 + rows_total) x columns [p0, p0 + kc) of `o` (p0 even) into slivers of w
// rows: sliver s starts at dst + s * kp (kp = ceil(kc / 2)) and holds the pair word of (r, q) at
// [q * w + r] = bf16(o(r, p0+2q)) | bf16(o(r, p0+2q+1)) << 16, the missing odd value and rows past
// the block zero. B is packed as B^T by the same code (its columns are B^T's rows).
template <typename S>
void pack_pairs_from(const S* base, const Bf16Operand& o, int64_t r0, int64_t rows_total,
                     int64_t p0, int64_t kc, int w, bool wide, uint32_t* dst) {
  const int64_t kp = (kc + 1) / 2;
  if (o.row_stride == 1 && o.col_stride != 1) {
    // A column is contiguous (dy^T as A, x as B, W^T): two columns make a pair, down the rows.
    // Pair by pair across every sliver, so each column is read as one contiguous run.
    for (int64_t q = 0; q < kp; ++q) {
      const S* lo = base + (p0 + 2 * q) * o.col_stride + r0;
      const S* hi = 2 * q + 1 < kc ? lo + o.col_stride : nullptr;
      for (int64_t s = 0; s < rows_total; s += w) {
        const int64_t rows = std::min<int64_t>(w, rows_total - s);
        const S* h = hi != nullptr ? hi + s : nullptr;
        if (wide) {
          columns_to_pairs_wide(lo + s, h, rows, dst + s * kp + q * w);
        } else {
          columns_to_pairs(lo + s, h, rows, dst + s * kp + q * w);
        }
      }
    }
    const int64_t last = (rows_total - 1) / w * w;
    gemm_detail::zero_sliver_tail(dst + last * kp, kp, int64_t{w}, rows_total - last);
    return;
  }
  thread_local gemm_detail::AlignedScratch<uint32_t> stage_scratch;
  for (int64_t s = 0; s < rows_total; s += w) {
    const int64_t rows = std::min<int64_t>(w, rows_total - s);
    uint32_t* d = dst + s * kp;
    if (o.col_stride == 1) {
      // A row is contiguous (x, dy as A; W as B^T): each row's run becomes contiguous pair
      // words, then a 32-bit transpose puts them sliver-major.
      uint32_t* stage = stage_scratch.get(static_cast<size_t>(rows * kp));
      for (int64_t i = 0; i < rows; ++i) {
        const S* row = base + (r0 + s + i) * o.row_stride + p0;
        if (wide) {
          row_to_pairs_wide(row, kc, stage + i * kp);
        } else {
          row_to_pairs(row, kc, stage + i * kp);
        }
      }
      gemm_detail::transpose_copy(stage, kp, rows, kp, d, int64_t{w});
    } else {  // neither: element by element
      for (int64_t q = 0; q < kp; ++q) {
        const int64_t c0 = p0 + 2 * q;
        const bool odd = 2 * q + 1 < kc;
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t r = r0 + s + i;
          d[q * w + i] = bf16_at(o, r, c0) | (odd ? bf16_at(o, r, c0 + 1) << 16 : 0u);
        }
      }
    }
    gemm_detail::zero_sliver_tail(d, kp, int64_t{w}, rows);
  }
}

// `wide`: the AVX-512 versions of the conversion loops may run.
void pack_pairs(const Bf16Operand& o, int64_t r0, int64_t rows_total, int64_t p0, int64_t kc,
                int w, bool wide, uint32_t* dst) {
  if (o.bf16 != nullptr) {
    pack_pairs_from(o.bf16, o, r0, rows_total, p0, kc, w, wide, dst);
  } else {
    pack_pairs_from(o.f32, o, r0, rows_total, p0, kc, w, wide, dst);
  }
}

// The operand with its origin moved by `rows` rows and `cols` columns.
Bf16Operand offset(const Bf16Operand& o, int64_t rows, int64_t cols) {
  Bf16Operand r = o;
  const int64_t at = rows * o.row_stride + cols * o.col_stride;
  if (r.f32 != nullptr) r.f32 += at;
  else r.bf16 += at;
  return r;
}

// A subnormal f32 as a zero of its sign (the DAZ/FTZ of vdpbf16ps).
inline float flush(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

// bf16 bits to f32 with a subnormal read as zero.
inline float bf16_daz(uint32_t h) {
  h &= 0xffffu;
  if ((h & 0x7f80u) == 0) h &= 0x8000u;
  return bf16_to_f32(static_cast<uint16_t>(h));
}

}  // namespace

void round_to_bf16(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<uint16_t>(bf16_bits(src[i]));
}

const GemmBf16Kernel& active_gemm_bf16_kernel() {
  static const GemmBf16Kernel kernel = [] {
    if (std::strcmp(kernel_table().isa, "avx512") == 0 && cpu_features().has_avx512_set() &&
        cpu_features().avx512_bf16) {
      return avx512bf16_gemm_bf16_kernel();
    }
    return scalar_gemm_bf16_kernel();
  }();
  return kernel;
}

bool gemm_bf16_is_accelerated() { return active_gemm_bf16_kernel().fn != scalar::gemm_bf16_micro; }

void gemm_bf16(int64_t m, int64_t n, int64_t k, Bf16Operand a, Bf16Operand b, float* c,
               int64_t ldc, bool accumulate, ThreadPool* pool, const GemmBf16Kernel* kernel) {
  TS_CHECK(m >= 0 && n >= 0 && k >= 0 && ldc >= n);
  TS_CHECK((a.f32 == nullptr) != (a.bf16 == nullptr) && (b.f32 == nullptr) != (b.bf16 == nullptr));
  if (gemm_detail::trivial_product(m, n, k, c, ldc, accumulate)) return;
  const GemmBf16Kernel& kr = kernel != nullptr ? *kernel : active_gemm_bf16_kernel();
  TS_CHECK(kr.fn != nullptr && kr.mr >= 1 && kr.nr >= 1 && kr.mr * kr.nr <= 16 * 64 && kr.kp >= 1);
  gemm_detail::Blocking bl;
  bl.mr = kr.mr;
  bl.nr = kr.nr;
  bl.kc = 2 * int64_t{kr.kp};  // even, so pairs never straddle a depth block
  bl.mc = kr.mc;
  bl.nc = kr.nc;
  bl.unit = 2;
  const bool wide = kr.fn == avx512bf16::gemm_bf16_micro;
  gemm_detail::split_over_pool(m, n, k, kr.mr, kr.nr, pool,
                               [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const Bf16Operand as = offset(a, i0, 0);
    // B^T as an operand: its rows are B's columns.
    const Bf16Operand bt = offset({b.f32, b.bf16, b.col_stride, b.row_stride}, j0, 0);
    gemm_detail::blocked_gemm_serial<uint32_t>(
        i1 - i0, j1 - j0, k, c + i0 * ldc + j0, ldc, accumulate, bl,
        [&](int64_t r0, int64_t rows, int64_t p0, int64_t kc, uint32_t* dst) {
          pack_pairs(as, r0, rows, p0, kc, kr.mr, wide, dst);
        },
        [&](int64_t c0, int64_t cols, int64_t p0, int64_t kc, uint32_t* dst) {
          pack_pairs(bt, c0, cols, p0, kc, kr.nr, wide, dst);
        },
        kr.fn);
  });
}

namespace scalar {

void gemm_bf16_micro(int64_t kp, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc,
                     bool load_c) {
  constexpr int kMr = 4, kNr = 8;
  float acc[kMr][kNr];
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) acc[i][j] = load_c ? flush(c[i * ldc + j]) : 0.0f;
  }
  for (int64_t q = 0; q < kp; ++q) {
    for (int i = 0; i < kMr; ++i) {
      const uint32_t aw = a[q * kMr + i];
      const float a_lo = bf16_daz(aw), a_hi = bf16_daz(aw >> 16);
      for (int j = 0; j < kNr; ++j) {
        const uint32_t bw = b[q * kNr + j];
        float s = flush(std::fma(a_hi, bf16_daz(bw >> 16), acc[i][j]));
        acc[i][j] = flush(std::fma(a_lo, bf16_daz(bw), s));
      }
    }
  }
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) c[i * ldc + j] = acc[i][j];
  }
}

}  // namespace scalar

GemmBf16Kernel scalar_gemm_bf16_kernel() {
  GemmBf16Kernel k;
  k.fn = scalar::gemm_bf16_micro;
  k.name = "scalar";
  k.mr = 4;
  k.nr = 8;
  k.kp = 128;
  k.mc = 128;
  k.nc = 1024;
  return k;
}

}  // namespace tessera::kernels
