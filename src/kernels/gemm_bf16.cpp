#include "tessera/kernels/gemm_bf16.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tessera/base/check.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

// Per-thread packing buffers, kept between calls; aligned to a cache line for speed only.
struct Scratch {
  std::vector<uint32_t> storage;
  uint32_t* get(size_t n) {
    if (storage.size() < n + 16) storage.resize(n + 16);
    const auto addr = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + ((64 - addr % 64) % 64) / sizeof(uint32_t);
  }
};

inline uint32_t bf16_at(const Bf16Operand& o, int64_t r, int64_t c) {
  const int64_t at = r * o.row_stride + c * o.col_stride;
  return o.bf16 != nullptr ? o.bf16[at] : f32_to_bf16(o.f32[at]);
}

// Packs rows [r0, r0 + rows_total) x columns [p0, p0 + kc) of `o` (p0 even) into slivers of w
// rows: sliver s starts at dst + s * kp (kp = ceil(kc / 2)) and holds the pair word of (r, q) at
// [q * w + r] = bf16(o(r, p0+2q)) | bf16(o(r, p0+2q+1)) << 16, the missing odd value and rows past
// the block zero. B is packed as B^T by the same code (its columns are B^T's rows).
void pack_pairs(const Bf16Operand& o, int64_t r0, int64_t rows_total, int64_t p0, int64_t kc,
                int w, uint32_t* dst) {
  const int64_t kp = (kc + 1) / 2, full = kc / 2;
  for (int64_t s = 0; s < rows_total; s += w) {
    const int64_t rows = std::min<int64_t>(w, rows_total - s);
    uint32_t* d = dst + s * kp;
    if (o.col_stride == 1) {  // a row is contiguous: walk along it
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t r = r0 + s + i;
        if (o.bf16 != nullptr) {
          const uint16_t* src = o.bf16 + r * o.row_stride + p0;
          for (int64_t q = 0; q < full; ++q) {
            d[q * w + i] = src[2 * q] | static_cast<uint32_t>(src[2 * q + 1]) << 16;
          }
        } else {
          const float* src = o.f32 + r * o.row_stride + p0;
          for (int64_t q = 0; q < full; ++q) {
            d[q * w + i] = f32_to_bf16(src[2 * q]) |
                           static_cast<uint32_t>(f32_to_bf16(src[2 * q + 1])) << 16;
          }
        }
        if (kp > full) d[full * w + i] = bf16_at(o, r, p0 + 2 * full);
      }
    } else {  // walk down the rows (contiguous when row_stride == 1: dy^T, W^T)
      for (int64_t q = 0; q < kp; ++q) {
        const int64_t c0 = p0 + 2 * q;
        const bool odd = 2 * q + 1 < kc;
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t r = r0 + s + i;
          d[q * w + i] = bf16_at(o, r, c0) | (odd ? bf16_at(o, r, c0 + 1) << 16 : 0u);
        }
      }
    }
    if (rows < w) {
      for (int64_t q = 0; q < kp; ++q) {
        for (int64_t i = rows; i < w; ++i) d[q * w + i] = 0;
      }
    }
  }
}

void gemm_serial(int64_t m, int64_t n, int64_t k, const Bf16Operand& a, const Bf16Operand& b,
                 float* c, int64_t ldc, bool accumulate, const GemmBf16Kernel& kr) {
  const int mr = kr.mr, nr = kr.nr;
  const int64_t kc_max = std::min<int64_t>(2 * static_cast<int64_t>(kr.kp), k);
  const int64_t kc_even = kc_max + (kc_max & 1);  // block starts stay even
  const int64_t kp_max = (kc_max + 1) / 2;
  const int64_t mc_max = std::min<int64_t>(kr.mc, (m + mr - 1) / mr * mr);
  const int64_t nc_max = std::min<int64_t>(kr.nc, (n + nr - 1) / nr * nr);
  thread_local Scratch a_scratch, b_scratch;
  uint32_t* ap = a_scratch.get(static_cast<size_t>(mc_max * kp_max));
  uint32_t* bp = b_scratch.get(static_cast<size_t>(nc_max * kp_max));
  alignas(64) float tile[16 * 64];
  TS_CHECK(mr * nr <= 16 * 64);
  // B^T as an operand: its rows are B's columns.
  const Bf16Operand bt{b.f32, b.bf16, b.col_stride, b.row_stride};
  for (int64_t jc = 0; jc < n; jc += nc_max) {
    const int64_t nc = std::min(nc_max, n - jc);
    for (int64_t pc = 0; pc < k; pc += kc_even) {
      const int64_t kc = std::min(kc_even, k - pc);
      const int64_t kp = (kc + 1) / 2;
      const bool load_c = accumulate || pc > 0;
      pack_pairs(bt, jc, nc, pc, kc, nr, bp);
      for (int64_t ic = 0; ic < m; ic += mc_max) {
        const int64_t mc = std::min(mc_max, m - ic);
        pack_pairs(a, ic, mc, pc, kc, mr, ap);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          const int64_t cols = std::min<int64_t>(nr, nc - jr);
          const uint32_t* bs = bp + jr * kp;
          for (int64_t ir = 0; ir < mc; ir += mr) {
            const int64_t rows = std::min<int64_t>(mr, mc - ir);
            float* ct = c + (ic + ir) * ldc + jc + jr;
            const uint32_t* as = ap + ir * kp;
            if (rows == mr && cols == nr) {
              kr.fn(kp, as, bs, ct, ldc, load_c);
              continue;
            }
            if (load_c) {
              for (int64_t i = 0; i < rows; ++i) {
                std::memcpy(tile + i * nr, ct + i * ldc, static_cast<size_t>(cols) * sizeof(float));
              }
            }
            kr.fn(kp, as, bs, tile, nr, load_c);
            for (int64_t i = 0; i < rows; ++i) {
              std::memcpy(ct + i * ldc, tile + i * nr, static_cast<size_t>(cols) * sizeof(float));
            }
          }
        }
      }
    }
  }
}

constexpr int64_t kParallelMinMacs = int64_t{1} << 18;

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
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
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
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    }
    return;
  }
  const GemmBf16Kernel& kr = kernel != nullptr ? *kernel : active_gemm_bf16_kernel();
  TS_CHECK(kr.fn != nullptr && kr.mr >= 1 && kr.nr >= 1 && kr.mr * kr.nr <= 16 * 64 && kr.kp >= 1);
  const int nt = pool == nullptr ? 1 : pool->size();
  if (nt <= 1 || m * n * k < kParallelMinMacs) {
    gemm_serial(m, n, k, a, b, c, ldc, accumulate, kr);
    return;
  }
  // C split by whole register tiles along its longer side; no element depends on the split.
  const bool by_cols = n >= m;
  const int64_t unit = by_cols ? kr.nr : kr.mr;
  const int64_t units = ((by_cols ? n : m) + unit - 1) / unit;
  pool->run([&](int t, int n_threads) {
    const int64_t u0 = units * t / n_threads, u1 = units * (t + 1) / n_threads;
    if (u0 >= u1) return;
    if (by_cols) {
      const int64_t j0 = u0 * unit, j1 = std::min(n, u1 * unit);
      Bf16Operand bs = b;
      if (bs.f32 != nullptr) bs.f32 += j0 * b.col_stride;
      else bs.bf16 += j0 * b.col_stride;
      gemm_serial(m, j1 - j0, k, a, bs, c + j0, ldc, accumulate, kr);
    } else {
      const int64_t i0 = u0 * unit, i1 = std::min(m, u1 * unit);
      Bf16Operand as = a;
      if (as.f32 != nullptr) as.f32 += i0 * a.row_stride;
      else as.bf16 += i0 * a.row_stride;
      gemm_serial(i1 - i0, n, k, as, b, c + i0 * ldc, ldc, accumulate, kr);
    }
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
