// KvCache: keys and values of every layer, stored in fixed-size blocks of positions (paged), in
// f16 (the default: half the memory and bandwidth) or f32. Each sequence slot has a block table
// mapping its positions to blocks: position p of a slot lives in block table[p / block_size].
// This is the storage the forward pass reads and writes; which blocks a sequence gets, sharing
// of prefix blocks and eviction belong to the engine above (engine/block_allocator.h).
// Layout: [layer][block][position in block][kv_dim] for K and for V.
// create() gives the simple unpaged case: one block per slot holding the whole context.
// Thread-safety: not synchronized; used by the thread that runs the model. Distinct
// (layer, slot, position) entries may be written from different pool threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tessera/base/page_buffer.h"
#include "tessera/base/status.h"
#include "tessera/kernels/attention.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/model_config.h"

namespace tessera::model {

class KvCache {
 public:
  // n_slots sequences of n_positions each, one block per slot (block tables preset).
  // `dtype` must be f16 or f32 (kInvalidArgument otherwise).
  // Errors: kResourceExhausted if the size overflows or cannot be had.
  static Result<KvCache> create(const ModelConfig& config, int32_t n_slots, int64_t n_positions,
                                kernels::DType dtype = kernels::DType::kF16);
  // A pool of n_blocks blocks of block_size positions shared by n_slots sequence slots whose
  // block tables start empty (set_block_table). Errors as create().
  static Result<KvCache> create_paged(const ModelConfig& config, int32_t n_slots, int32_t n_blocks,
                                      int32_t block_size,
                                      kernels::DType dtype = kernels::DType::kF16);

  int32_t n_slots() const { return static_cast<int32_t>(tables_.size()); }
  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return block_size_; }
  int64_t n_layers() const { return n_layers_; }
  int64_t kv_dim() const { return kv_dim_; }
  kernels::DType dtype() const { return dtype_; }
  size_t row_bytes() const { return row_bytes_; }  // one position's K (or V) of one layer
  size_t bytes() const { return k_.size() + v_.size(); }
  size_t block_bytes() const { return 2 * static_cast<size_t>(n_layers_) * block_stride_; }

  // Positions slot `slot` can hold: its block table's length times block_size.
  int64_t capacity(int32_t slot) const;
  // Points `slot` at `blocks` (each in [0, n_blocks)). The caller (the engine) guarantees a block
  // is written by at most one sequence: shared prefix blocks are full and only read.
  void set_block_table(int32_t slot, std::span<const int32_t> blocks);
  std::span<const int32_t> block_table(int32_t slot) const;

  // The K / V row of (layer, slot, pos): kv_dim values of dtype(). Preconditions (checked):
  // layer and slot in range, pos < capacity(slot).
  std::byte* k_row(int64_t layer, int32_t slot, int64_t pos) { return k_.data() + offset(layer, slot, pos); }
  std::byte* v_row(int64_t layer, int32_t slot, int64_t pos) { return v_.data() + offset(layer, slot, pos); }
  // Copies block `block`'s keys and values of every layer out of / into `bytes` (block_bytes():
  // for each layer its K rows, then its V rows). Preconditions (checked): block in range, the
  // span's size is block_bytes(). For keeping prefix blocks across engines of one model. With a
  // mirror, the mirror's copy (its errors: a device's copy failing).
  Status read_block(int32_t block, std::span<std::byte> bytes) const;
  Status write_block(int32_t block, std::span<const std::byte> bytes);

  // Where K and V live when a model runs elsewhere than on this process's memory (a device
  // model: model/device_decoder.h keeps them in device memory, in this cache's layout, and
  // installs itself here at its first step). With a mirror, read_block/write_block go to it and
  // the host rows (k_row, v_row, rows) are never written: only the model that installed the
  // mirror may run on this cache. The mirror lives as long as the cache.
  class Mirror {
   public:
    virtual ~Mirror() = default;
    virtual Status read_block(int32_t block, std::span<std::byte> bytes) const = 0;
    virtual Status write_block(int32_t block, std::span<const std::byte> bytes) = 0;
  };
  void set_mirror(std::shared_ptr<Mirror> mirror) { mirror_ = std::move(mirror); }
  Mirror* mirror() const { return mirror_.get(); }
  // Every position of (layer, slot), for the attention kernel. Valid until the slot's block
  // table changes.
  kernels::KvRows rows(int64_t layer, int32_t slot) const;

 private:
  static Result<KvCache> allocate(const ModelConfig& config, int32_t n_slots, int32_t n_blocks,
                                  int64_t block_size, kernels::DType dtype);
  size_t offset(int64_t layer, int32_t slot, int64_t pos) const;
  int64_t n_layers_ = 0;
  int32_t n_blocks_ = 0;
  int32_t block_size_ = 0;
  int64_t kv_dim_ = 0;
  kernels::DType dtype_ = kernels::DType::kF16;
  size_t row_bytes_ = 0;
  size_t block_stride_ = 0;  // bytes of one block in one layer
  size_t layer_stride_ = 0;  // bytes of one layer
  std::vector<std::vector<int32_t>> tables_;  // per slot
  // Anonymous pages: resident only once written, so a large pool costs memory as it fills.
  PageBuffer k_;
  PageBuffer v_;
  std::shared_ptr<Mirror> mirror_;
};

}  // namespace tessera::model
