#include "tessera/engine/kv_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "tessera/base/check.h"

namespace tessera::engine {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

Result<KvPoolSize> size_kv_pool(const model::ModelConfig& c, const EngineOptions& o) {
  KvPoolSize size;
  size.ctx_size = o.ctx_size > 0 ? o.ctx_size : c.context_length;
  if (size.ctx_size <= 1) return invalid_argument("context size must be at least 2 positions");
  if (o.max_running < 1) return invalid_argument("max_running (parallel slots) must be >= 1");
  if (o.block_size < 1 || o.block_size > 4096) {
    return invalid_argument(fmt::format("block size {} is outside [1, 4096]", o.block_size));
  }
  if (o.n_blocks < 0) return invalid_argument("the number of KV blocks must be >= 0");
  if (o.kv_memory_bytes < 0) return invalid_argument("the KV memory budget must be >= 0");
  size.blocks_per_seq = ceil_div(size.ctx_size, o.block_size);
  size.block_bytes = 2 * c.n_layers * o.block_size *
                     static_cast<int64_t>(kernels::dtype_row_bytes(o.kv_dtype, c.kv_dim()));
  if (o.n_blocks > 0) {
    size.n_blocks = o.n_blocks;
  } else {
    size.n_blocks = size.blocks_per_seq * o.max_running;
    if (o.kv_memory_bytes > 0) {
      const int64_t fit = o.kv_memory_bytes / size.block_bytes;
      if (fit < size.blocks_per_seq) {
        return invalid_argument(fmt::format(
            "a KV budget of {:.1f} MiB holds {} positions, fewer than one sequence of {} "
            "(which needs {:.1f} MiB): lower the context size or raise the KV memory",
            static_cast<double>(o.kv_memory_bytes) / (1 << 20), fit * o.block_size,
            size.ctx_size,
            static_cast<double>(size.blocks_per_seq * size.block_bytes) / (1 << 20)));
      }
      size.n_blocks = std::min(size.n_blocks, fit);
    }
    if (size.n_blocks > (int64_t{1} << 30)) {
      return resource_exhausted("KV pool would need too many blocks");
    }
  }
  if (size.n_blocks < size.blocks_per_seq) {
    return invalid_argument(fmt::format(
        "{} KV blocks of {} positions cannot hold one sequence of {} positions (need {})",
        size.n_blocks, o.block_size, size.ctx_size, size.blocks_per_seq));
  }
  return size;
}

int64_t kv_memory_share(int64_t available_bytes, int64_t weight_bytes, double share) {
  const int64_t left = available_bytes - std::max<int64_t>(weight_bytes, 0);
  if (left <= 0 || share <= 0) return 0;
  return static_cast<int64_t>(static_cast<double>(left) * std::min(share, 1.0));
}

int64_t available_memory_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  int64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    long long v = 0;
    if (std::sscanf(line, "MemAvailable: %lld kB", &v) == 1) {
      kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}

int64_t default_kv_memory_bytes(int64_t weight_bytes, double share) {
  const int64_t available = available_memory_bytes();
  if (available <= 0) return 0;
  return std::max<int64_t>(1, kv_memory_share(available, weight_bytes, share));
}

Result<KvManager> KvManager::create(const model::ModelConfig& config, const EngineOptions& o,
                                    const KvPoolSize& size) {
  TS_ASSIGN_OR_RETURN(model::KvCache kv,
                      model::KvCache::create_paged(config, o.max_running,
                                                   static_cast<int32_t>(size.n_blocks),
                                                   o.block_size, o.kv_dtype));
  return KvManager(std::move(kv), o.max_running, o.prefix_cache);
}

KvManager::KvManager(model::KvCache cache, int32_t n_slots, bool prefix_cache)
    : cache_(std::move(cache)),
      blocks_(cache_.n_blocks()),
      block_size_(cache_.block_size()),
      prefix_cache_(prefix_cache) {
  for (int32_t s = n_slots - 1; s >= 0; --s) free_slots_.push_back(s);
}

void KvManager::assign_slot(Sequence& s) {
  TS_CHECK(!free_slots_.empty() && s.slot < 0);
  s.slot = free_slots_.back();
  free_slots_.pop_back();
}

int64_t KvManager::take_cached_prefix(Sequence& s) {
  if (!prefix_cache_) return 0;
  const int64_t bs = block_size_;
  const int64_t n_full = (static_cast<int64_t>(s.tokens.size()) - 1) / bs;
  uint64_t parent = 0;
  for (int64_t i = 0; i < n_full; ++i) {
    std::span<const int32_t> toks(s.tokens.data() + i * bs, static_cast<size_t>(bs));
    const uint64_t h = chain_block_hash(parent, toks, s.request.adapter_id);
    std::optional<int32_t> b = blocks_.lookup(h, parent, toks);
    if (!b) break;
    s.blocks.push_back(*b);
    s.block_hashes.push_back(h);
    parent = h;
  }
  s.n_computed = static_cast<int64_t>(s.blocks.size()) * bs;
  return static_cast<int64_t>(s.blocks.size());
}

int64_t KvManager::blocks_to_grow(const Sequence& s, int64_t n_positions) const {
  return std::max<int64_t>(0, ceil_div(n_positions, block_size_) -
                                  static_cast<int64_t>(s.blocks.size()));
}

void KvManager::grow(Sequence& s, int64_t n_positions) {
  const int64_t n = ceil_div(n_positions, block_size_);
  while (static_cast<int64_t>(s.blocks.size()) < n) {
    std::optional<int32_t> b = blocks_.allocate();
    TS_CHECK_MSG(b.has_value(), "KV pool smaller than the blocks the scheduler planned");
    s.blocks.push_back(*b);
  }
  cache_.set_block_table(s.slot, s.blocks);
}

void KvManager::publish_verified(Sequence& s) {
  if (!prefix_cache_) return;
  const int64_t bs = block_size_;
  const int64_t n_full = std::min<int64_t>(s.n_computed, static_cast<int64_t>(s.tokens.size())) / bs;
  for (int64_t i = static_cast<int64_t>(s.block_hashes.size()); i < n_full; ++i) {
    const uint64_t parent = i == 0 ? 0 : s.block_hashes[static_cast<size_t>(i - 1)];
    std::span<const int32_t> toks(s.tokens.data() + i * bs, static_cast<size_t>(bs));
    const uint64_t h = chain_block_hash(parent, toks, s.request.adapter_id);
    blocks_.publish(s.blocks[static_cast<size_t>(i)], h, parent, toks);
    s.block_hashes.push_back(h);
  }
}

void KvManager::rollback(Sequence& s) {
  const auto keep = static_cast<size_t>(ceil_div(s.n_computed, block_size_));
  if (s.blocks.size() <= keep) return;
  while (s.blocks.size() > keep) {
    blocks_.release(s.blocks.back());
    s.blocks.pop_back();
  }
  if (s.slot >= 0) cache_.set_block_table(s.slot, s.blocks);
}

void KvManager::drop_blocks(Sequence& s) {
  for (auto b = s.blocks.rbegin(); b != s.blocks.rend(); ++b) blocks_.release(*b);
  s.blocks.clear();
  s.block_hashes.clear();
  s.n_computed = 0;
  if (s.slot >= 0) cache_.set_block_table(s.slot, {});
}

void KvManager::release(Sequence& s) {
  drop_blocks(s);
  if (s.slot >= 0) {
    free_slots_.push_back(s.slot);
    s.slot = -1;
  }
}

KvBlockFormat KvManager::block_format() const {
  return {cache_.n_layers(), cache_.kv_dim(), cache_.block_size(), cache_.dtype(),
          cache_.block_bytes()};
}

Result<PrefixBlockSet> KvManager::export_prefix_cache(int64_t max_bytes,
                                                      const BlockStorage& storage) const {
  PrefixBlockSet set;
  set.format = block_format();
  const std::vector<CachedBlock> cached = blocks_.cached_blocks();
  const std::vector<size_t> kept =
      select_kept_blocks(cached, max_bytes / static_cast<int64_t>(set.format.block_bytes));
  if (kept.empty()) return set;
  TS_ASSIGN_OR_RETURN(std::span<std::byte> out, storage(kept.size() * set.format.block_bytes));
  if (out.size() != kept.size() * set.format.block_bytes) {
    return internal_error("prefix block storage has the wrong size");
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const CachedBlock& c = cached[kept[i]];
    TS_RETURN_IF_ERROR(
        cache_.read_block(c.block, out.subspan(i * set.format.block_bytes, set.format.block_bytes)));
    set.blocks.push_back({c.hash, c.parent, c.tokens});
  }
  return set;
}

Result<int64_t> KvManager::import_prefix_cache(const PrefixBlockSet& set,
                                               std::span<const std::byte> bytes) {
  if (!(set.format == block_format())) {
    return invalid_argument(fmt::format(
        "prefix blocks of {} layers x {} x {} positions ({}) do not fit this engine's KV pool",
        set.format.n_layers, set.format.kv_dim, set.format.block_size,
        kernels::dtype_name(set.format.dtype)));
  }
  if (bytes.size() != set.bytes()) {
    return invalid_argument(fmt::format("prefix blocks need {} bytes, got {}", set.bytes(),
                                        bytes.size()));
  }
  if (!prefix_cache_) return int64_t{0};
  const size_t bb = set.format.block_bytes;
  // The most recently used blocks are last: when the pool is smaller, keep the newest.
  const size_t n = std::min<size_t>(set.blocks.size(), static_cast<size_t>(blocks_.n_free()));
  const size_t first = set.blocks.size() - n;
  int64_t taken = 0;
  for (size_t i = first; i < set.blocks.size(); ++i) {
    const PrefixBlock& pb = set.blocks[i];
    if (static_cast<int64_t>(pb.tokens.size()) != set.format.block_size) {
      return invalid_argument("a prefix block does not hold block_size tokens");
    }
    std::optional<int32_t> b = blocks_.allocate();
    if (!b) break;
    if (Status st = cache_.write_block(*b, bytes.subspan(i * bb, bb)); !st.is_ok()) {
      blocks_.release(*b);
      return st;
    }
    blocks_.publish(*b, pb.hash, pb.parent, pb.tokens);
    blocks_.release(*b);
    ++taken;
  }
  return taken;
}

}  // namespace tessera::engine
