#include "tessera/model/lora_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/lora.h"

namespace tessera::model {
namespace {

constexpr std::string_view kSlotNames[kLoraSlots] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                                     "ffn_gate", "ffn_up", "ffn_down"};

// "blk.N.<slot>.weight" -> (N, slot); false for anything else.
bool parse_target(std::string_view name, int64_t* layer, int* slot) {
  if (name.substr(0, 4) != "blk.") return false;
  name.remove_prefix(4);
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 6) return false;
  int64_t n = 0;
  for (char c : name.substr(0, dot)) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  std::string_view rest = name.substr(dot + 1);
  for (int s = 0; s < kLoraSlots; ++s) {
    if (rest.size() == kSlotNames[s].size() + 7 && rest.substr(0, kSlotNames[s].size()) == kSlotNames[s] &&
        rest.substr(kSlotNames[s].size()) == ".weight") {
      *layer = n;
      *slot = s;
      return true;
    }
  }
  return false;
}

}  // namespace

Status LoraSet::set(int32_t id, std::shared_ptr<const LoraAdapter> adapter, int64_t n_layers) {
  if (id < 0 || id >= kMaxAdapterIds) {
    return invalid_argument(fmt::format("adapter id {} is outside [0, {})", id, kMaxAdapterIds));
  }
  Entry e;
  if (adapter != nullptr) {
    e.by_layer.assign(static_cast<size_t>(n_layers), {});
    for (const LoraMatrix& m : adapter->matrices) {
      int64_t layer = 0;
      int slot = 0;
      if (!parse_target(m.target, &layer, &slot) || layer >= n_layers) {
        return invalid_argument(fmt::format("adapter matrix '{}' is not a weight of this model's {} layers",
                                            m.target, n_layers));
      }
      e.by_layer[static_cast<size_t>(layer)][static_cast<size_t>(slot)] = &m;
    }
    e.adapter = std::move(adapter);
  }
  if (static_cast<size_t>(id) >= entries_.size()) entries_.resize(static_cast<size_t>(id) + 1);
  Entry& slot = entries_[static_cast<size_t>(id)];
  n_registered_ += (e.adapter != nullptr) - (slot.adapter != nullptr);
  slot = std::move(e);
  return Status::ok();
}

bool LoraSet::has(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < entries_.size() &&
         entries_[static_cast<size_t>(id)].adapter != nullptr;
}

void LoraSet::apply_segment(Segment& g, const float* x, int64_t x_stride, float* y,
                            int64_t y_stride, ThreadPool* pool) {
  const kernels::KernelTable& table = kernels::kernel_table();
  const LoraMatrix& m = *g.m;
  const auto n = static_cast<int64_t>(g.rows.size());
  g.ts.resize(static_cast<size_t>(n * m.rank));
  if (g.rows.back() - g.rows.front() + 1 == n) {  // contiguous: in place
    const int64_t r0 = g.rows.front();
    kernels::lora_shrink(table, m.a_data(), m.dtype, m.rank, m.n_in, x + r0 * x_stride, x_stride, n,
                         g.ts.data(), pool);
    kernels::lora_expand(table, m.bt_data(), m.dtype, m.rank, m.n_out, g.ts.data(), n, m.scale,
                         y + r0 * y_stride, y_stride, pool);
    return;
  }
  g.xs.resize(static_cast<size_t>(n * m.n_in));
  g.ys.assign(static_cast<size_t>(n * m.n_out), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(g.xs.data() + i * m.n_in, x + g.rows[static_cast<size_t>(i)] * x_stride,
                static_cast<size_t>(m.n_in) * sizeof(float));
  }
  kernels::lora_shrink(table, m.a_data(), m.dtype, m.rank, m.n_in, g.xs.data(), m.n_in, n,
                       g.ts.data(), pool);
  kernels::lora_expand(table, m.bt_data(), m.dtype, m.rank, m.n_out, g.ts.data(), n, m.scale,
                       g.ys.data(), m.n_out, pool);
  for (int64_t i = 0; i < n; ++i) {
    float* yr = y + g.rows[static_cast<size_t>(i)] * y_stride;
    const float* u = g.ys.data() + i * m.n_out;
    for (int64_t o = 0; o < m.n_out; ++o) yr[o] += u[o];
  }
}

void LoraSet::apply(int64_t layer, LoraSlot slot, std::span<const int32_t> ids, const float* x,
                    int64_t x_stride, float* y, int64_t y_stride, ThreadPool* pool) {
  const auto s = static_cast<size_t>(slot);
  const auto matrix_of = [&](int32_t id) -> const LoraMatrix* {
    if (id < 0) return nullptr;
    return entries_[static_cast<size_t>(id)].by_layer[static_cast<size_t>(layer)][s];
  };
  seen_.clear();
  for (int32_t id : ids) {
    if (matrix_of(id) != nullptr && std::find(seen_.begin(), seen_.end(), id) == seen_.end()) {
      seen_.push_back(id);
    }
  }
  if (seen_.empty()) return;
  if (segments_.size() < seen_.size()) segments_.resize(seen_.size());
  for (size_t g = 0; g < seen_.size(); ++g) {
    Segment& seg = segments_[g];
    seg.m = matrix_of(seen_[g]);
    seg.rows.clear();
    for (size_t r = 0; r < ids.size(); ++r) {
      if (ids[r] == seen_[g]) seg.rows.push_back(static_cast<int32_t>(r));
    }
  }
  const auto n_segments = static_cast<int64_t>(seen_.size());
  // Segments too small to split their own products (a decode step's row or two per adapter)
  // run one per task, so the pool's threads share the adapters' reads; a segment big enough to
  // split (a prefill chunk) splits itself instead.
  bool all_small = true;
  for (int64_t g = 0; g < n_segments; ++g) {
    const Segment& seg = segments_[static_cast<size_t>(g)];
    all_small = all_small && seg.m->rank * static_cast<int64_t>(seg.rows.size()) *
                                     std::max(seg.m->n_in, seg.m->n_out) < kernels::kLoraParallelWork;
  }
  if (pool != nullptr && pool->size() > 1 && n_segments >= pool->size() && all_small) {
    pool->parallel_for(n_segments, 1, [&](int64_t g0, int64_t g1) {
      for (int64_t g = g0; g < g1; ++g) {
        apply_segment(segments_[static_cast<size_t>(g)], x, x_stride, y, y_stride, nullptr);
      }
    });
    return;
  }
  for (int64_t g = 0; g < n_segments; ++g) {
    apply_segment(segments_[static_cast<size_t>(g)], x, x_stride, y, y_stride, pool);
  }
}

}  // namespace tessera::model
