#include "tessera/engine/block_allocator.h"

#include <algorithm>

#include "tessera/base/check.h"

namespace tessera::engine {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 finalizer over a running combination: cheap, well distributed.
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 31;
  return h;
}

}  // namespace

uint64_t chain_block_hash(uint64_t parent, std::span<const int32_t> tokens, int32_t adapter_id) {
  uint64_t h = mix(parent, static_cast<uint64_t>(static_cast<uint32_t>(adapter_id)) + 1);
  for (int32_t t : tokens) h = mix(h, static_cast<uint32_t>(t));
  return h == 0 ? 1 : h;  // 0 is reserved for "no parent"
}

BlockAllocator::BlockAllocator(int32_t n_blocks) {
  TS_CHECK(n_blocks >= 1);
  blocks_.resize(static_cast<size_t>(n_blocks));
  free_.reserve(static_cast<size_t>(n_blocks));
  // Hand out low block ids first (stack: push high ids first).
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int32_t> BlockAllocator::allocate() {
  int32_t b = -1;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    lru_.pop_front();
    unpublish(b);
  } else {
    return std::nullopt;
  }
  blocks_[static_cast<size_t>(b)].refs = 1;
  return b;
}

std::optional<int32_t> BlockAllocator::lookup(uint64_t hash, uint64_t parent,
                                              std::span<const int32_t> tokens) {
  auto it = index_.find(hash);
  if (it == index_.end()) return std::nullopt;
  Block& blk = blocks_[static_cast<size_t>(it->second)];
  if (blk.parent != parent || !std::equal(blk.tokens.begin(), blk.tokens.end(), tokens.begin(),
                                          tokens.end())) {
    return std::nullopt;
  }
  if (blk.refs == 0) lru_.erase(blk.lru_pos);
  ++blk.refs;
  return it->second;
}

void BlockAllocator::publish(int32_t block, uint64_t hash, uint64_t parent,
                             std::span<const int32_t> tokens) {
  Block& blk = blocks_.at(static_cast<size_t>(block));
  TS_CHECK(blk.refs > 0);
  if (blk.published || index_.count(hash) != 0) return;
  blk.published = true;
  blk.hash = hash;
  blk.parent = parent;
  blk.tokens.assign(tokens.begin(), tokens.end());
  index_.emplace(hash, block);
}

void BlockAllocator::release(int32_t block) {
  Block& blk = blocks_.at(static_cast<size_t>(block));
  TS_CHECK(blk.refs > 0);
  if (--blk.refs > 0) return;
  if (blk.published) {
    lru_.push_back(block);
    blk.lru_pos = std::prev(lru_.end());
  } else {
    free_.push_back(block);
  }
}

int32_t BlockAllocator::ref_count(int32_t block) const {
  return blocks_.at(static_cast<size_t>(block)).refs;
}

std::vector<CachedBlock> BlockAllocator::cached_blocks() const {
  std::vector<CachedBlock> out;
  out.reserve(lru_.size());
  for (int32_t b : lru_) {
    const Block& blk = blocks_[static_cast<size_t>(b)];
    out.push_back({b, blk.hash, blk.parent, blk.tokens});
  }
  return out;
}

void BlockAllocator::unpublish(int32_t block) {
  Block& blk = blocks_[static_cast<size_t>(block)];
  if (!blk.published) return;
  index_.erase(blk.hash);
  blk.published = false;
  blk.tokens.clear();
}

}  // namespace tessera::engine
