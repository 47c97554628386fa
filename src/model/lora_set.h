// The adapters a model applies in its forward pass, by id (Batch::adapter_ids), and the batched
// application itself: for one weight matrix of one layer, the rows of a step are grouped by
// adapter and each group gets y += scale * B * (A * x) (kernels/lora.h), so every adapter's A and
// B are read once per step whatever the number of its rows, the base matmul is unchanged (read
// once for all rows), and rows with no adapter (-1) or an adapter that leaves this matrix alone
// are untouched. Rows of one group that sit next to each other (a prefill chunk) are used in
// place; scattered rows are gathered into scratch and their updates added back. With several
// groups (a decode step mixing adapters: a row or two each, too small to split one product
// across threads) the groups themselves run in parallel on the pool, each on one thread with
// scratch of its own (they write disjoint rows of y); with fewer groups than threads, or one big
// enough to split its own products (a prefill chunk), each group's products split across the pool. Either way every row's arithmetic is the same.
// Thread-safety: not thread-safe (scratch); owned by one model, used by its caller's thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/model/lora_adapter.h"

namespace tessera::model {

// The matrices of a llama-family layer an adapter may update, in GGUF names' order.
enum class LoraSlot : uint8_t { kQ, kK, kV, kO, kGate, kUp, kDown };
constexpr int kLoraSlots = 7;

// Largest adapter id + 1.
constexpr int32_t kMaxAdapterIds = 1 << 16;

class LoraSet {
 public:
  // Registers `adapter` under `id`, replacing any; null unregisters. The adapter's matrices must
  // have been checked against the model (load_lora_adapter does), so only their names are read
  // here. Errors: kInvalidArgument for an id outside [0, kMaxAdapterIds) or a target that is not
  // blk.N.{attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down}.weight with N < n_layers.
  Status set(int32_t id, std::shared_ptr<const LoraAdapter> adapter, int64_t n_layers);

  bool has(int32_t id) const;
  bool empty() const { return n_registered_ == 0; }

  // For weight `slot` of `layer`: y[r * y_stride ...] += the update of row r's adapter
  // (ids[r]; -1 or an id whose adapter lacks the matrix: nothing) over x[r * x_stride ...].
  // Precondition: every id >= 0 in `ids` is registered (has(id)); n_in and n_out are the
  // matrix's columns and rows.
  void apply(int64_t layer, LoraSlot slot, std::span<const int32_t> ids, const float* x,
             int64_t x_stride, float* y, int64_t y_stride, ThreadPool* pool);

 private:
  struct Entry {
    std::shared_ptr<const LoraAdapter> adapter;
    std::vector<std::array<const LoraMatrix*, kLoraSlots>> by_layer;
  };
  std::vector<Entry> entries_;  // indexed by id
  int64_t n_registered_ = 0;
  // One adapter's rows in a call, with scratch for its gathered rows, rank values and updates.
  struct Segment {
    const LoraMatrix* m = nullptr;
    std::vector<int32_t> rows;
    std::vector<float> xs, ts, ys;
  };
  // y += the update of segment `g` over x (its products on `pool`, or on this thread if null).
  void apply_segment(Segment& g, const float* x, int64_t x_stride, float* y, int64_t y_stride,
                     ThreadPool* pool);
  std::vector<int32_t> seen_;
  std::vector<Segment> segments_;  // the first seen_.size() are this call's
};

}  // namespace tessera::model
