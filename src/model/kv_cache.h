// KvCache: keys and values of every layer for a fixed number of sequence slots, addressed by
// (layer, sequence slot, position), stored in f16 (the default: half the memory and bandwidth)
// or f32. This is the storage the forward pass reads and writes; which slot a request uses, and
// paging across blocks, belong to the engine above.
// Layout: [layer][slot][position][kv_dim] for K and for V.
// Thread-safety: not synchronized; used by the thread that runs the model. Distinct
// (layer, slot, position) entries may be written from different pool threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/kernels/attention.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/model_config.h"

namespace tessera::model {

class KvCache {
 public:
  // Allocates zeroed storage. `dtype` must be f16 or f32 (kInvalidArgument otherwise).
  // Errors: kResourceExhausted if the size overflows or cannot be had.
  static Result<KvCache> create(const ModelConfig& config, int32_t n_slots, int64_t n_positions,
                                kernels::DType dtype = kernels::DType::kF16);

  int32_t n_slots() const { return n_slots_; }
  int64_t n_positions() const { return n_positions_; }
  int64_t kv_dim() const { return kv_dim_; }
  kernels::DType dtype() const { return dtype_; }
  size_t row_bytes() const { return row_bytes_; }  // one position's K (or V) of one layer
  size_t bytes() const { return k_.size() + v_.size(); }

  // The K / V row of (layer, slot, pos): kv_dim values of dtype(). Preconditions (checked):
  // layer, slot and pos in range.
  std::byte* k_row(int64_t layer, int32_t slot, int64_t pos) { return k_.data() + offset(layer, slot, pos); }
  std::byte* v_row(int64_t layer, int32_t slot, int64_t pos) { return v_.data() + offset(layer, slot, pos); }
  // Every position of (layer, slot), for the attention kernel.
  kernels::KvRows rows(int64_t layer, int32_t slot) const;

 private:
  size_t offset(int64_t layer, int32_t slot, int64_t pos) const;
  int64_t n_layers_ = 0;
  int32_t n_slots_ = 0;
  int64_t n_positions_ = 0;
  int64_t kv_dim_ = 0;
  kernels::DType dtype_ = kernels::DType::kF16;
  size_t row_bytes_ = 0;
  std::vector<std::byte> k_;
  std::vector<std::byte> v_;
};

}  // namespace tessera::model
