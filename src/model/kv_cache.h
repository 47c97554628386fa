// KvCache: keys and values of every layer for a fixed number of sequence slots, in f32, addressed
// by (layer, sequence slot, position). This is the storage the forward pass reads and writes;
// which slot a request uses, and paging across blocks, belong to the engine above.
// Layout: [layer][slot][position][kv_dim] for K and for V.
// Thread-safety: not synchronized; used by the thread that runs the model. Distinct
// (layer, slot, position) entries may be written from different pool threads.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/model_config.h"

namespace tessera::model {

class KvCache {
 public:
  // Allocates zeroed storage. Errors: kResourceExhausted if the size overflows or cannot be had.
  static Result<KvCache> create(const ModelConfig& config, int32_t n_slots, int64_t n_positions);

  int32_t n_slots() const { return n_slots_; }
  int64_t n_positions() const { return n_positions_; }
  int64_t kv_dim() const { return kv_dim_; }
  size_t bytes() const { return (k_.size() + v_.size()) * sizeof(float); }

  // Preconditions (checked): layer, slot and pos in range.
  float* k(int64_t layer, int32_t slot, int64_t pos) { return k_.data() + offset(layer, slot, pos); }
  float* v(int64_t layer, int32_t slot, int64_t pos) { return v_.data() + offset(layer, slot, pos); }
  const float* k(int64_t layer, int32_t slot, int64_t pos) const {
    return k_.data() + offset(layer, slot, pos);
  }
  const float* v(int64_t layer, int32_t slot, int64_t pos) const {
    return v_.data() + offset(layer, slot, pos);
  }

 private:
  size_t offset(int64_t layer, int32_t slot, int64_t pos) const;
  int64_t n_layers_ = 0;
  int32_t n_slots_ = 0;
  int64_t n_positions_ = 0;
  int64_t kv_dim_ = 0;
  std::vector<float> k_;
  std::vector<float> v_;
};

}  // namespace tessera::model
