#include "tessera/model/kv_cache.h"

#include <fmt/format.h>

#include <new>

namespace tessera::model {

Result<KvCache> KvCache::create(const ModelConfig& config, int32_t n_slots, int64_t n_positions,
                                kernels::DType dtype) {
  if (n_slots < 1 || n_positions < 1) {
    return invalid_argument(fmt::format("KV cache needs at least one slot and position (got {}, {})",
                                        n_slots, n_positions));
  }
  if (dtype != kernels::DType::kF16 && dtype != kernels::DType::kF32) {
    return invalid_argument(fmt::format("KV cache type must be f16 or f32, not {}",
                                        kernels::dtype_name(dtype)));
  }
  KvCache c;
  c.n_layers_ = config.n_layers;
  c.n_slots_ = n_slots;
  c.n_positions_ = n_positions;
  c.kv_dim_ = config.kv_dim();
  c.dtype_ = dtype;
  c.row_bytes_ = kernels::dtype_row_bytes(dtype, c.kv_dim_);
  int64_t n = 0;
  const bool overflow =
      __builtin_mul_overflow(c.n_layers_, static_cast<int64_t>(n_slots), &n) ||
      __builtin_mul_overflow(n, n_positions, &n) ||
      __builtin_mul_overflow(n, static_cast<int64_t>(c.row_bytes_), &n);
  if (overflow || n > (int64_t{1} << 42)) {
    return resource_exhausted(fmt::format("KV cache of {} slots x {} positions is too large",
                                          n_slots, n_positions));
  }
  try {
    c.k_.assign(static_cast<size_t>(n), std::byte{0});
    c.v_.assign(static_cast<size_t>(n), std::byte{0});
  } catch (const std::bad_alloc&) {
    return resource_exhausted(fmt::format("cannot allocate a KV cache of {} MiB", 2 * n >> 20));
  }
  return c;
}

size_t KvCache::offset(int64_t layer, int32_t slot, int64_t pos) const {
  TS_CHECK(layer >= 0 && layer < n_layers_ && slot >= 0 && slot < n_slots_ && pos >= 0 &&
           pos < n_positions_);
  return static_cast<size_t>((layer * n_slots_ + slot) * n_positions_ + pos) * row_bytes_;
}

kernels::KvRows KvCache::rows(int64_t layer, int32_t slot) const {
  const size_t base = offset(layer, slot, 0);
  return {dtype_, k_.data() + base, v_.data() + base, row_bytes_};
}

}  // namespace tessera::model
