#include "tessera/kernels/ops.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <utility>
#include <cmath>
#include <cstring>
#include <vector>

#include "tessera/base/check.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

// Cache budgets of matmul's tiles: weight rows per tile within a typical L1 (32-48 KiB), a token
// tile's activations within a typical per-core L2 (>= 512 KiB on current x86 cores).
constexpr size_t kTileWeightBytes = 16 << 10;
constexpr size_t kTileActivationBytes = 256 << 10;

// Asks for rows [r0, r1) of a weight matrix ahead of use. With several tokens per tile the tile
// kernel computes long enough per row group that the next group's rows, fetched meanwhile,
// arrive before they are needed; the hardware prefetcher alone left it latency-bound (measured:
// SmolLM2-135M FFN up at 16 tokens from DRAM 113 GFLOP/s against 156 from cache).
void prefetch_rows(const std::byte* base, size_t row_bytes, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const std::byte* row = base + r * row_bytes;
    for (size_t off = 0; off < row_bytes; off += 64) __builtin_prefetch(row + off, 0, 3);
  }
}

// Everything the operators need of a packed layout, one row per layout: the dtype it holds, its
// group size, how to pack a GGUF matrix into it and read one row back, the per-token activation
// terms its kernel reads (aux_per_block int32s per weight block of `block` values, and how to
// compute them; none for F16 layouts) and its kernel, from the active table or the scalar oracle.
using PackFn = void (*)(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
using RowFn = void (*)(const void* group, int l, int64_t n_cols, float* dst);
using AuxFn = void (*)(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols, int32_t* out);

struct LayoutInfo {
  MatrixLayout layout;
  DType dtype;
  size_t (*group_bytes)(int64_t n_cols);
  PackFn pack;
  RowFn row_to_float;
  AuxFn aux;
  int64_t block, aux_per_block;
  Q4_0x16GemmFn KernelTable::*gemm;  // Q4_Kx16GemmFn is the same type
  Q4_0x16GemmFn scalar_gemm;
};

// In preferred_layout's order of preference (one layout per dtype).
constexpr LayoutInfo kLayouts[] = {
    {MatrixLayout::kQ4_0x16, DType::kQ4_0, q4_0x16_group_bytes, pack_q4_0x16, q4_0x16_row_to_float,
     q8_0_block_terms, 32, 2, &KernelTable::q4_0x16_gemm, scalar::q4_0x16_q8_0_gemm},
    {MatrixLayout::kQ4_Kx16, DType::kQ4_K, q4_kx16_group_bytes, pack_q4_kx16, q4_kx16_row_to_float,
     q8_k_min_pairs, 256, 4, &KernelTable::q4_kx16_gemm, scalar::q4_kx16_q8_k_gemm},
    {MatrixLayout::kQ8_0x16, DType::kQ8_0, q8_0x16_group_bytes, pack_q8_0x16, q8_0x16_row_to_float,
     q8_0_block_terms_x128, 32, 2, &KernelTable::q8_0x16_gemm, scalar::q8_0x16_q8_0_gemm},
    {MatrixLayout::kF16x16, DType::kF16, f16x16_group_bytes, pack_f16x16, f16x16_row_to_float,
     nullptr, 32, 0, &KernelTable::f16x16_gemm, scalar::f16x16_f32_gemm},
    // Reads only d_x of the terms.
    {MatrixLayout::kQ8_0_2of4x16, DType::kQ8_0_2of4, q8_0_2of4x16_group_bytes, pack_q8_0_2of4x16,
     q8_0_2of4x16_row_to_float, q8_0_block_terms, 32, 2, &KernelTable::q8_0_2of4x16_gemm,
     scalar::q8_0_2of4x16_q8_0_gemm},
    // The same bytes as Q4_0 (packed_q4_0.h).
    {MatrixLayout::kIQ4_NLx16, DType::kIQ4_NL, q4_0x16_group_bytes, pack_q4_0x16,
     iq4_nlx16_row_to_float, q8_0_block_terms_x128, 32, 2, &KernelTable::iq4_nlx16_gemm,
     scalar::iq4_nlx16_q8_0_gemm},
    {MatrixLayout::kQ4_1x16, DType::kQ4_1, q4_1x16_group_bytes, pack_q4_1x16, q4_1x16_row_to_float,
     q8_0_block_terms_sum, 32, 2, &KernelTable::q4_1x16_gemm, scalar::q4_1x16_q8_0_gemm},
    {MatrixLayout::kQ5_0x16, DType::kQ5_0, q5_0x16_group_bytes, pack_q5_0x16, q5_0x16_row_to_float,
     q8_0_block_terms_x16, 32, 2, &KernelTable::q5_0x16_gemm, scalar::q5_0x16_q8_0_gemm},
    {MatrixLayout::kQ5_1x16, DType::kQ5_1, q5_1x16_group_bytes, pack_q5_1x16, q5_1x16_row_to_float,
     q8_0_block_terms_sum, 32, 2, &KernelTable::q5_1x16_gemm, scalar::q5_1x16_q8_0_gemm},
    {MatrixLayout::kQ2_Kx16, DType::kQ2_K, q2_kx16_group_bytes, pack_q2_kx16, q2_kx16_row_to_float,
     q8_k_bsum_pairs, 256, 8, &KernelTable::q2_kx16_gemm, scalar::q2_kx16_q8_k_gemm},
    {MatrixLayout::kQ6_Kx16, DType::kQ6_K, q6_kx16_group_bytes, pack_q6_kx16, q6_kx16_row_to_float,
     q8_k_bsum_pairs, 256, 8, &KernelTable::q6_kx16_gemm, scalar::q6_kx16_q8_k_gemm},
    {MatrixLayout::kF16_2of4x16, DType::kF16_2of4, f16_2of4x16_group_bytes, pack_f16_2of4x16,
     f16_2of4x16_row_to_float, nullptr, 32, 0, &KernelTable::f16_2of4x16_gemm,
     scalar::f16_2of4x16_f32_gemm},
};

const LayoutInfo& layout_info(MatrixLayout layout) {
  for (const LayoutInfo& i : kLayouts) {
    if (i.layout == layout) return i;
  }
  TS_CHECK_MSG(false, "no packed layout info (kRows?)");
  return kLayouts[0];
}

// What matmul needs to know of a packed layout: its group size in bytes, the per-token
// activation term its kernel reads (int32s per token, and how to compute them) and the kernel.
struct PackedFormat {
  size_t group_bytes;
  int64_t aux_per_token;
  AuxFn aux;
  Q4_0x16GemmFn gemm;
};

PackedFormat packed_format(const KernelTable& table, const MatrixRef& w) {
  const LayoutInfo& i = layout_info(w.layout);
  const Q4_0x16GemmFn simd = table.*i.gemm;
  return {i.group_bytes(w.n_cols), w.n_cols / i.block * i.aux_per_block, i.aux,
          simd != nullptr ? simd : i.scalar_gemm};
}

// Packed weights (16-row groups) of one or more matrices sharing the input (same dtype, layout
// and columns): every matrix's groups, then its n_rows % 16 last rows as one item of vec_dots,
// form one list of work items split over the threads in one parallel region; each thread's
// groups meet one token block at a time (as the tiles below).
void matmul_packed(const KernelTable& table, std::span<const MatrixRef> ws, const void* xq,
                   size_t xq_row_bytes, int64_t n_tokens, std::span<float* const> ys,
                   ThreadPool* pool) {
  const MatrixRef& w0 = ws[0];
  const PackedFormat f = packed_format(table, w0);
  thread_local std::vector<int32_t> aux_buffer;
  const auto n_aux = static_cast<size_t>(n_tokens * f.aux_per_token);
  if (aux_buffer.size() < n_aux) aux_buffer.resize(n_aux);
  if (f.aux != nullptr) f.aux(xq, xq_row_bytes, n_tokens, w0.n_cols, aux_buffer.data());
  const int32_t* aux = aux_buffer.data();  // `aux_buffer` names another thread's vector in the workers
  constexpr int64_t kRows = 16;
  const auto* xb = static_cast<const std::byte*>(xq);
  const int64_t token_block =
      std::max<int64_t>(1, static_cast<int64_t>(kTileActivationBytes / xq_row_bytes));
  const DTypeKernels& k = kernels_for(table, w0.dtype);
  // first_item[m]: index of matrix m's first item; items of m: its groups, then its tail (if any).
  std::array<int64_t, 9> first_item{};
  TS_CHECK(ws.size() <= 8);
  for (size_t m = 0; m < ws.size(); ++m) {
    const int64_t n_groups = ws[m].n_rows / kRows;
    first_item[m + 1] = first_item[m] + n_groups + (n_groups * kRows < ws[m].n_rows ? 1 : 0);
  }
  const int64_t n_items = first_item[ws.size()];
  auto run_matrix = [&](size_t m, int64_t i0, int64_t i1) {  // items [i0, i1) of matrix m
    const MatrixRef& w = ws[m];
    float* y = ys[m];
    const int64_t n_groups = w.n_rows / kRows;
    const auto* base = static_cast<const std::byte*>(w.data);
    const int64_t g1 = std::min(i1, n_groups);
    for (int64_t t0 = 0; t0 < n_tokens && i0 < g1; t0 += token_block) {
      const int64_t nt = std::min(token_block, n_tokens - t0);
      const int32_t* aux_t = f.aux_per_token > 0 ? aux + t0 * f.aux_per_token : aux;  // F16: none
      f.gemm(base + i0 * f.group_bytes, g1 - i0, xb + t0 * xq_row_bytes, xq_row_bytes, aux_t, nt,
             y + t0 * w.n_rows + i0 * kRows, w.n_rows, w.n_cols);
    }
    if (i1 > n_groups) {
      const std::byte* tail = base + n_groups * f.group_bytes;
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t r = n_groups * kRows; r < w.n_rows; ++r) {
          y[t * w.n_rows + r] = k.vec_dot(tail + (r - n_groups * kRows) * w.row_bytes,
                                          xb + t * xq_row_bytes, w.n_cols);
        }
      }
    }
  };
  auto items = [&](int64_t i0, int64_t i1) {
    for (size_t m = 0; m < ws.size(); ++m) {
      const int64_t a = std::max(i0, first_item[m]), b = std::min(i1, first_item[m + 1]);
      if (a < b) run_matrix(m, a - first_item[m], b - first_item[m]);
    }
  };
  if (pool == nullptr) {
    items(0, n_items);
  } else {
    // Guided: one contiguous range per thread over the first 7/8 of the items, so each streams
    // its weights front to back (chunks claimed dynamically throughout measured 20-30% slower
    // decode, docs/PERFORMANCE.md); the last 1/8 in chunks claimed from a shared counter by
    // whichever thread is done first, so a slower core does not leave the other waiting.
    const int64_t n_static = n_items - n_items / 8;
    const int64_t chunk = std::max<int64_t>(1, (n_items - n_static) / (2 * pool->size()));
    std::atomic<int64_t> next{n_static};
    pool->run([&](int thread, int threads) {
      items(n_static * thread / threads, n_static * (thread + 1) / threads);
      for (int64_t i = next.fetch_add(chunk); i < n_items; i = next.fetch_add(chunk)) {
        items(i, std::min(n_items, i + chunk));
      }
    });
  }
}

// Converts x[T, C] once to `table`'s vec_dot_type for `w`; returns the rows and their stride.
std::pair<const void*, size_t> activations_for(const KernelTable& table, const MatrixRef& w,
                                               const float* x, int64_t n_tokens) {
  const DTypeKernels& k = kernels_for(table, w.dtype);
  if (k.vec_dot_type == DType::kF32) return {x, static_cast<size_t>(w.n_cols) * sizeof(float)};
  thread_local std::vector<std::byte> xq_buffer;
  const DTypeKernels& kx = kernels_for(table, k.vec_dot_type);
  const size_t xq_row_bytes = dtype_row_bytes(k.vec_dot_type, w.n_cols);
  if (xq_buffer.size() < xq_row_bytes * n_tokens) xq_buffer.resize(xq_row_bytes * n_tokens);
  for (int64_t t = 0; t < n_tokens; ++t) {
    kx.from_float(x + t * w.n_cols, xq_buffer.data() + t * xq_row_bytes, w.n_cols);
  }
  return {xq_buffer.data(), xq_row_bytes};
}

}  // namespace

size_t matrix_bytes(const MatrixRef& w, MatrixLayout layout) {
  if (layout == MatrixLayout::kRows) return static_cast<size_t>(w.n_rows) * w.row_bytes;
  const int64_t n_groups = w.n_rows / 16;
  const auto tail = static_cast<size_t>(w.n_rows - n_groups * 16) * w.row_bytes;
  return static_cast<size_t>(n_groups) * layout_info(layout).group_bytes(w.n_cols) + tail;
}

size_t MatrixRef::bytes() const { return matrix_bytes(*this, layout); }

MatrixLayout preferred_layout(const KernelTable& table, const MatrixRef& w) {
  if (w.layout != MatrixLayout::kRows || w.n_rows < 16) return MatrixLayout::kRows;
  for (const LayoutInfo& i : kLayouts) {
    if (i.dtype == w.dtype && table.*i.gemm != nullptr) return i.layout;
  }
  return MatrixLayout::kRows;
}

MatrixRef pack_matrix(const MatrixRef& w, MatrixLayout layout, std::byte* dst, ThreadPool* pool) {
  TS_CHECK(w.layout == MatrixLayout::kRows);
  MatrixRef out = w;
  out.data = dst;
  out.layout = layout;
  const auto* src = static_cast<const std::byte*>(w.data);
  const int64_t n_groups = layout == MatrixLayout::kRows ? 0 : w.n_rows / 16;
  PackFn pack = nullptr;
  size_t group_bytes = 0;
  if (layout != MatrixLayout::kRows) {
    const LayoutInfo& i = layout_info(layout);
    TS_CHECK(w.dtype == i.dtype);
    pack = i.pack;
    group_bytes = i.group_bytes(w.n_cols);
  }
  const size_t group_src = 16 * w.row_bytes;
  const size_t packed = static_cast<size_t>(n_groups) * group_bytes;
  const size_t tail = static_cast<size_t>(w.n_rows - n_groups * 16) * w.row_bytes;
  // Units of work: the groups, then the tail rows as one more (a plain copy).
  auto run = [&](int64_t begin, int64_t end) {
    const int64_t g_end = std::min(end, n_groups);
    if (begin < g_end) {
      pack(src + static_cast<size_t>(begin) * group_src, w.row_bytes, g_end - begin, w.n_cols,
           dst + static_cast<size_t>(begin) * group_bytes);
    }
    if (end > n_groups && tail > 0) {
      std::memcpy(dst + packed, src + static_cast<size_t>(n_groups) * group_src, tail);
    }
  };
  if (pool != nullptr && pool->size() > 1 && n_groups > 1) {
    pool->parallel_for(n_groups + 1, 1, run);
  } else {
    run(0, n_groups + 1);
  }
  return out;
}

void matmul_shared_input(const KernelTable& table, std::span<const MatrixRef> ws, const float* x,
                         int64_t n_tokens, std::span<float* const> ys, ThreadPool* pool) {
  TS_CHECK(ws.size() == ys.size() && !ws.empty());
  bool together = ws.size() <= 8 && ws[0].layout != MatrixLayout::kRows;
  for (const MatrixRef& w : ws) {
    together = together && w.layout == ws[0].layout && w.dtype == ws[0].dtype && w.n_cols == ws[0].n_cols;
  }
  if (!together) {
    for (size_t m = 0; m < ws.size(); ++m) matmul(table, ws[m], x, n_tokens, ys[m], pool);
    return;
  }
  const std::pair<const void*, size_t> act = activations_for(table, ws[0], x, n_tokens);
  matmul_packed(table, ws, act.first, act.second, n_tokens, ys, pool);
}

void matmul_shared_input(std::span<const MatrixRef> ws, const float* x, int64_t n_tokens,
                         std::span<float* const> ys, ThreadPool* pool) {
  matmul_shared_input(kernel_table(), ws, x, n_tokens, ys, pool);
}

void matmul(const MatrixRef& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
  matmul(kernel_table(), w, x, n_tokens, y, pool);
}

void matmul(const KernelTable& table, const MatrixRef& w, const float* x, int64_t n_tokens,
            float* y, ThreadPool* pool) {
  const DTypeKernels& k = kernels_for(table, w.dtype);
  const auto* base = static_cast<const std::byte*>(w.data);
  // Activations in the weights' vec_dot_type, converted once per call (not per row). (Named
  // variables, not a structured binding: the lambda below captures them, which clang before 16
  // refuses for bindings.)
  const std::pair<const void*, size_t> act = activations_for(table, w, x, n_tokens);
  const void* xq = act.first;
  const size_t xq_row_bytes = act.second;
  if (w.layout != MatrixLayout::kRows) {
    matmul_packed(table, std::span<const MatrixRef>(&w, 1), xq, xq_row_bytes, n_tokens,
                  std::span<float* const>(&y, 1), pool);
    return;
  }
  // Tiles of rows x tokens, so that weights are streamed from memory once per token tile rather
  // than once per token (prefill): a block of weight rows small enough for L1 meets every token of
  // the tile before the next block is loaded, and the tile's activations stay in L2 meanwhile.
  // Each output is one vec_dot (or one output of a vec_dot_tile, whose per-output arithmetic
  // does not depend on the tile's shape), so results do not depend on the tiling.
  int64_t row_block =
      std::max<int64_t>(1, static_cast<int64_t>(kTileWeightBytes / std::max<size_t>(1, w.row_bytes)));
  if (k.vec_dot_tile != nullptr) row_block = std::max<int64_t>(kMaxTile, row_block / kMaxTile * kMaxTile);
  const int64_t token_block =
      std::max<int64_t>(1, static_cast<int64_t>(kTileActivationBytes / xq_row_bytes));
  auto rows = [&](int64_t r0, int64_t r1) {
    for (int64_t t0 = 0; t0 < n_tokens; t0 += token_block) {
      const int64_t t1 = std::min(n_tokens, t0 + token_block);
      for (int64_t rb = r0; rb < r1; rb += row_block) {
        const int64_t re = std::min(r1, rb + row_block);
        // Several tokens (prefill) use the tile kernel: each weight block is unpacked once for up
        // to 4 tokens. A single token (decode) uses vec_dot, which measured faster than 1x1 tiles
        // (tinyllama Q4_0 tg64: 37 vs 29-35 tok/s, same run; docs/PERFORMANCE.md).
        if (k.vec_dot_tile != nullptr && t1 - t0 > 1) {
          const int64_t row_step = kMaxTile;
          for (int64_t r = rb; r < re; r += row_step) {
            const int nr = static_cast<int>(std::min<int64_t>(row_step, re - r));
            if (t0 == 0) prefetch_rows(base, w.row_bytes, r + row_step, std::min(r1, r + 2 * row_step));
            for (int64_t t = t0; t < t1; t += kMaxTile) {
              const int nt = static_cast<int>(std::min<int64_t>(kMaxTile, t1 - t));
              k.vec_dot_tile(base + r * w.row_bytes, w.row_bytes, nr,
                             static_cast<const std::byte*>(xq) + t * xq_row_bytes, xq_row_bytes,
                             nt, y + t * w.n_rows + r, w.n_rows, w.n_cols);
            }
          }
          continue;
        }
        for (int64_t t = t0; t < t1; ++t) {
          const auto* xt = static_cast<const std::byte*>(xq) + t * xq_row_bytes;
          float* yt = y + t * w.n_rows;
          for (int64_t r = rb; r < re; ++r) yt[r] = k.vec_dot(base + r * w.row_bytes, xt, w.n_cols);
        }
      }
    }
  };
  if (pool == nullptr || pool->size() == 1 || w.n_rows <= 16) {
    rows(0, w.n_rows);
  } else {
    // Guided, as matmul_packed splits its groups: one contiguous range per thread over 7/8 of
    // the 16-row chunks, the rest claimed from a shared counter, so a core slowed by another
    // process does not leave the others spinning at the barrier (2:4 Q8_0 TinyLlama decode
    // spent a quarter of its samples waiting there under the static split).
    constexpr int64_t kChunkRows = 16;
    const int64_t n_items = (w.n_rows + kChunkRows - 1) / kChunkRows;
    const int64_t n_static = n_items - n_items / 8;
    const int64_t chunk = std::max<int64_t>(1, (n_items - n_static) / (2 * pool->size()));
    std::atomic<int64_t> next{n_static};
    auto items = [&](int64_t i0, int64_t i1) {
      if (i0 < i1) rows(i0 * kChunkRows, std::min(w.n_rows, i1 * kChunkRows));
    };
    pool->run([&](int thread, int threads) {
      items(n_static * thread / threads, n_static * (thread + 1) / threads);
      for (int64_t i = next.fetch_add(chunk); i < n_items; i = next.fetch_add(chunk)) {
        items(i, std::min(n_items, i + chunk));
      }
    });
  }
}

void dequantize_row(const MatrixRef& w, int64_t row, float* out) {
  TS_CHECK(row >= 0 && row < w.n_rows);
  if (w.layout != MatrixLayout::kRows) {
    const LayoutInfo& i = layout_info(w.layout);
    const size_t group_bytes = i.group_bytes(w.n_cols);
    const int64_t g = row / 16, n_groups = w.n_rows / 16;
    const auto* base = static_cast<const std::byte*>(w.data);
    if (g < n_groups) {
      i.row_to_float(base + g * group_bytes, static_cast<int>(row % 16), w.n_cols, out);
    } else {
      kernels_for(w.dtype).to_float(base + n_groups * group_bytes + (row - n_groups * 16) * w.row_bytes,
                                    out, w.n_cols);
    }
    return;
  }
  kernels_for(w.dtype).to_float(static_cast<const std::byte*>(w.data) + row * w.row_bytes, out,
                                w.n_cols);
}

void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void softmax(float* x, int64_t n) {
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::max(max, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t pos, const float* inv_freq) {
  std::vector<float> cs(static_cast<size_t>(head_dim));
  rope_angles(pos, inv_freq, head_dim, cs.data());
  rope_rotate(x, n_heads, head_dim, cs.data());
}

void rope_angles(int64_t pos, const float* inv_freq, int64_t head_dim, float* cs) {
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const double angle = static_cast<double>(pos) * static_cast<double>(inv_freq[i]);
    cs[2 * i] = static_cast<float>(std::cos(angle));
    cs[2 * i + 1] = static_cast<float>(std::sin(angle));
  }
}

void rope_rotate(float* x, int64_t n_heads, int64_t head_dim, const float* cs) {
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float c = cs[2 * i];
    const float s = cs[2 * i + 1];
    for (int64_t h = 0; h < n_heads; ++h) {
      float* p = x + h * head_dim + 2 * i;
      const float a = p[0];
      const float b = p[1];
      p[0] = a * c - b * s;
      p[1] = a * s + b * c;
    }
  }
}

void rope_rotate_neox(float* x, int64_t n_heads, int64_t head_dim, const float* cs) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float c = cs[2 * i];
    const float s = cs[2 * i + 1];
    for (int64_t h = 0; h < n_heads; ++h) {
      float* p = x + h * head_dim + i;
      const float a = p[0];
      const float b = p[half];
      p[0] = a * c - b * s;
      p[half] = a * s + b * c;
    }
  }
}

void silu_mul(float* gate, const float* up, int64_t n) { kernel_table().silu_mul(gate, up, n); }

void gelu_tanh_mul(float* gate, const float* up, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCoef = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * g * (1.0f + kCoef * g * g))) * up[i];
  }
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

}  // namespace tessera::kernels
