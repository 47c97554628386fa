#include "tessera/kernels/lora.h"

#include <algorithm>
#include <vector>

#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

}  // namespace

void lora_shrink(const KernelTable& table, const float* a, int64_t rank, int64_t n_in,
                 const float* x, int64_t x_stride, int64_t n_rows, float* t, ThreadPool* pool) {
  lora_shrink(table, a, DType::kF32, rank, n_in, x, x_stride, n_rows, t, pool);
}

void lora_shrink(const KernelTable& table, const void* a, DType dtype, int64_t rank, int64_t n_in,
                 const float* x, int64_t x_stride, int64_t n_rows, float* t, ThreadPool* pool) {
  const auto dot = kernels_for(table, dtype).dot;
  const size_t row_bytes = dtype_row_bytes(dtype, n_in);
  const auto* base = static_cast<const uint8_t*>(a);
  auto run = [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const void* ak = base + static_cast<size_t>(k) * row_bytes;
      for (int64_t r = 0; r < n_rows; ++r) t[r * rank + k] = dot(ak, x + r * x_stride, n_in);
    }
  };
  // Worth splitting only when there is enough work (rank x rows x n_in multiply-adds).
  if (pool == nullptr || rank * n_rows * n_in < kLoraParallelWork) {
    run(0, rank);
  } else {
    pool->parallel_for(rank, std::max<int64_t>(1, rank / (4 * pool->size())), run);
  }
}

void lora_expand(const KernelTable& table, const float* bt, int64_t rank, int64_t n_out,
                 const float* t, int64_t n_rows, float scale, float* y, int64_t y_stride,
                 ThreadPool* pool) {
  lora_expand(table, bt, DType::kF32, rank, n_out, t, n_rows, scale, y, y_stride, pool);
}

void lora_expand(const KernelTable& table, const void* bt, DType dtype, int64_t rank, int64_t n_out,
                 const float* t, int64_t n_rows, float scale, float* y, int64_t y_stride,
                 ThreadPool* pool) {
  const auto axpy = table.axpy;
  const auto to_float = kernels_for(table, dtype).to_float;
  const bool wide = dtype == DType::kF32;
  const size_t elem = dtype_row_bytes(dtype, 1);
  const auto* base = static_cast<const uint8_t*>(bt);
  constexpr int64_t kSlice = 512;  // outputs per task: rank x 512 floats of Bt (32 KiB at rank 16)
  auto run = [&](int64_t s0, int64_t s1) {
    // A half-precision slice is widened here first (rank x kSlice floats: at most 512 KiB, kept
    // per thread between calls).
    thread_local std::vector<float> widened;
    if (!wide && widened.size() < static_cast<size_t>(rank * kSlice)) widened.resize(static_cast<size_t>(rank * kSlice));
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t o0 = s * kSlice, len = std::min(kSlice, n_out - o0);
      const float* slice = nullptr;  // Bt[k, o0 ...] is slice[k * ld ...]
      int64_t ld = n_out;
      if (wide) {
        slice = static_cast<const float*>(bt) + o0;
      } else {
        for (int64_t k = 0; k < rank; ++k) {
          to_float(base + static_cast<size_t>(k * n_out + o0) * elem, widened.data() + k * kSlice, len);
        }
        slice = widened.data();
        ld = kSlice;
      }
      for (int64_t r = 0; r < n_rows; ++r) {
        const float* tr = t + r * rank;
        float* yr = y + r * y_stride + o0;
        for (int64_t k = 0; k < rank; ++k) axpy(scale * tr[k], slice + k * ld, yr, len);
      }
    }
  };
  const int64_t n_slices = (n_out + kSlice - 1) / kSlice;
  if (pool == nullptr || rank * n_rows * n_out < kLoraParallelWork) {
    run(0, n_slices);
  } else {
    pool->parallel_for(n_slices, 1, run);
  }
}

}  // namespace tessera::kernels
