#include "tessera/kernels/lora.h"

#include <algorithm>

#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {

void lora_shrink(const KernelTable& table, const float* a, int64_t rank, int64_t n_in,
                 const float* x, int64_t x_stride, int64_t n_rows, float* t, ThreadPool* pool) {
  const auto dot = kernels_for(table, DType::kF32).dot;
  auto run = [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const float* ak = a + k * n_in;
      for (int64_t r = 0; r < n_rows; ++r) t[r * rank + k] = dot(ak, x + r * x_stride, n_in);
    }
  };
  // Worth splitting only when there is enough work (rank x rows x n_in multiply-adds).
  if (pool == nullptr || rank * n_rows * n_in < (int64_t{1} << 18)) {
    run(0, rank);
  } else {
    pool->parallel_for(rank, std::max<int64_t>(1, rank / (4 * pool->size())), run);
  }
}

void lora_expand(const KernelTable& table, const float* b, int64_t rank, int64_t n_out,
                 const float* t, int64_t n_rows, float scale, float* y, int64_t y_stride,
                 ThreadPool* pool) {
  const auto dot = kernels_for(table, DType::kF32).dot;
  auto run = [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const float* bo = b + o * rank;
      for (int64_t r = 0; r < n_rows; ++r) y[r * y_stride + o] += scale * dot(bo, t + r * rank, rank);
    }
  };
  if (pool == nullptr || rank * n_rows * n_out < (int64_t{1} << 18)) {
    run(0, n_out);
  } else {
    pool->parallel_for(n_out, 64, run);
  }
}

}  // namespace tessera::kernels
