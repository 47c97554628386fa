#include "tessera/model/kv_cache.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "tessera/base/check.h"

namespace tessera::model {

Result<KvCache> KvCache::allocate(const ModelConfig& config, int32_t n_slots, int32_t n_blocks,
                                  int64_t block_size, kernels::DType dtype) {
  if (n_slots < 1 || n_blocks < 1 || block_size < 1) {
    return invalid_argument(fmt::format(
        "KV cache needs at least one slot, block and position (got {} slots, {} blocks of {})",
        n_slots, n_blocks, block_size));
  }
  if (block_size > std::numeric_limits<int32_t>::max()) {
    return resource_exhausted(fmt::format("KV cache block of {} positions is too large", block_size));
  }
  if (dtype != kernels::DType::kF16 && dtype != kernels::DType::kF32) {
    return invalid_argument(fmt::format("KV cache type must be f16 or f32, not {}",
                                        kernels::dtype_name(dtype)));
  }
  KvCache c;
  c.n_layers_ = config.n_layers;
  c.n_blocks_ = n_blocks;
  c.block_size_ = static_cast<int32_t>(block_size);
  c.kv_dim_ = config.kv_dim();
  c.dtype_ = dtype;
  c.row_bytes_ = kernels::dtype_row_bytes(dtype, c.kv_dim_);
  int64_t block = 0;
  int64_t layer = 0;
  int64_t n = 0;
  const bool overflow =
      __builtin_mul_overflow(block_size, static_cast<int64_t>(c.row_bytes_), &block) ||
      __builtin_mul_overflow(block, static_cast<int64_t>(n_blocks), &layer) ||
      __builtin_mul_overflow(layer, c.n_layers_, &n);
  if (overflow || n > (int64_t{1} << 42)) {
    return resource_exhausted(fmt::format("KV cache of {} blocks x {} positions is too large",
                                          n_blocks, block_size));
  }
  c.block_stride_ = static_cast<size_t>(block);
  c.layer_stride_ = static_cast<size_t>(layer);
  c.tables_.resize(static_cast<size_t>(n_slots));
  auto k = PageBuffer::allocate(static_cast<size_t>(n));
  auto v = k.is_ok() ? PageBuffer::allocate(static_cast<size_t>(n)) : Result<PageBuffer>(k.status());
  if (!k.is_ok() || !v.is_ok()) {
    return resource_exhausted(fmt::format("cannot allocate a KV cache of {} MiB", 2 * n >> 20));
  }
  c.k_ = std::move(k).value();
  c.v_ = std::move(v).value();
  return c;
}

Result<KvCache> KvCache::create(const ModelConfig& config, int32_t n_slots, int64_t n_positions,
                                kernels::DType dtype) {
  if (n_positions < 1) {
    return invalid_argument(fmt::format("KV cache needs at least one position (got {})", n_positions));
  }
  TS_ASSIGN_OR_RETURN(KvCache c, allocate(config, n_slots, n_slots, n_positions, dtype));
  for (int32_t s = 0; s < n_slots; ++s) c.tables_[static_cast<size_t>(s)] = {s};
  return c;
}

Result<KvCache> KvCache::create_paged(const ModelConfig& config, int32_t n_slots,
                                      int32_t n_blocks, int32_t block_size, kernels::DType dtype) {
  return allocate(config, n_slots, n_blocks, block_size, dtype);
}

int64_t KvCache::capacity(int32_t slot) const {
  TS_CHECK(slot >= 0 && slot < n_slots());
  return static_cast<int64_t>(tables_[static_cast<size_t>(slot)].size()) * block_size_;
}

void KvCache::set_block_table(int32_t slot, std::span<const int32_t> blocks) {
  TS_CHECK(slot >= 0 && slot < n_slots());
  for (int32_t b : blocks) TS_CHECK(b >= 0 && b < n_blocks_);
  tables_[static_cast<size_t>(slot)].assign(blocks.begin(), blocks.end());
}

std::span<const int32_t> KvCache::block_table(int32_t slot) const {
  TS_CHECK(slot >= 0 && slot < n_slots());
  return tables_[static_cast<size_t>(slot)];
}

size_t KvCache::offset(int64_t layer, int32_t slot, int64_t pos) const {
  TS_CHECK(layer >= 0 && layer < n_layers_ && slot >= 0 && slot < n_slots() && pos >= 0);
  const std::vector<int32_t>& table = tables_[static_cast<size_t>(slot)];
  const auto block_index = static_cast<size_t>(pos / block_size_);
  TS_CHECK(block_index < table.size());
  return static_cast<size_t>(layer) * layer_stride_ +
         static_cast<size_t>(table[block_index]) * block_stride_ +
         static_cast<size_t>(pos % block_size_) * row_bytes_;
}

Status KvCache::read_block(int32_t block, std::span<std::byte> bytes) const {
  TS_CHECK(block >= 0 && block < n_blocks_ && bytes.size() == block_bytes());
  if (mirror_ != nullptr) return mirror_->read_block(block, bytes);
  std::byte* out = bytes.data();
  for (int64_t l = 0; l < n_layers_; ++l) {
    const size_t at = static_cast<size_t>(l) * layer_stride_ + static_cast<size_t>(block) * block_stride_;
    std::memcpy(out, k_.data() + at, block_stride_);
    std::memcpy(out + block_stride_, v_.data() + at, block_stride_);
    out += 2 * block_stride_;
  }
  return Status::ok();
}

Status KvCache::write_block(int32_t block, std::span<const std::byte> bytes) {
  TS_CHECK(block >= 0 && block < n_blocks_ && bytes.size() == block_bytes());
  if (mirror_ != nullptr) return mirror_->write_block(block, bytes);
  const std::byte* in = bytes.data();
  for (int64_t l = 0; l < n_layers_; ++l) {
    const size_t at = static_cast<size_t>(l) * layer_stride_ + static_cast<size_t>(block) * block_stride_;
    std::memcpy(k_.data() + at, in, block_stride_);
    std::memcpy(v_.data() + at, in + block_stride_, block_stride_);
    in += 2 * block_stride_;
  }
  return Status::ok();
}

kernels::KvRows KvCache::rows(int64_t layer, int32_t slot) const {
  TS_CHECK(layer >= 0 && layer < n_layers_ && slot >= 0 && slot < n_slots());
  const std::vector<int32_t>& table = tables_[static_cast<size_t>(slot)];
  const size_t base = static_cast<size_t>(layer) * layer_stride_;
  return {dtype_,        k_.data() + base, v_.data() + base, row_bytes_,
          table.data(),  block_size_,      block_stride_};
}

}  // namespace tessera::model
