// BlockAllocator: the engine's bookkeeping for the paged KV cache's blocks (model/kv_cache.h
// holds the storage). Blocks are reference counted: a sequence holds one reference to each block
// in its table. Full blocks can be published under a hash of their tokens and of everything before
// them (a chain hash), so a later prompt with the same prefix takes a reference to them instead of
// recomputing (prefix caching). A published block nobody references stays cached until a block is
// needed; then the least recently released one is evicted (LRU).
//
//   free ──allocate──> referenced ──release (last, unpublished)──> free
//                          │  ▲
//     release (last, published)  lookup hit
//                          ▼  │
//                 cached (evictable, LRU) ──allocate evicts──> referenced (new contents)
//
// Thread-safety: not synchronized; owned by the engine's scheduler thread.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace tessera::engine {

// Hash of a block of tokens given the hash of everything before it (0 for the first block) and
// the sequence's adapter id (KV differs per adapter).
uint64_t chain_block_hash(uint64_t parent, std::span<const int32_t> tokens, int32_t adapter_id);

// A published block nobody references (see BlockAllocator::cached_blocks).
struct CachedBlock {
  int32_t block = -1;
  uint64_t hash = 0;
  uint64_t parent = 0;
  std::vector<int32_t> tokens;
};

class BlockAllocator {
 public:
  explicit BlockAllocator(int32_t n_blocks);

  // A block to write, with one reference: a free block, else the least recently used cached one
  // (which is unpublished). nullopt when every block is referenced.
  std::optional<int32_t> allocate();
  // Adds one reference to a cached block holding `tokens` under `hash` (and `parent`, the hash
  // before it), or nullopt.
  std::optional<int32_t> lookup(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Publishes a referenced, full `block` under `hash`. If another block already holds that hash,
  // this one stays unpublished (both hold the same values; one copy is enough).
  void publish(int32_t block, uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  // Drops one reference. Precondition (checked): the block is referenced.
  void release(int32_t block);

  int32_t n_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  // Blocks allocate() can still hand out (free plus evictable cached).
  int32_t n_available() const { return n_free() + n_cached(); }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t n_cached() const { return static_cast<int32_t>(lru_.size()); }
  int32_t n_referenced() const { return n_blocks() - n_available(); }
  int32_t ref_count(int32_t block) const;
  // The cached (published, unreferenced) blocks, least recently released first.
  std::vector<CachedBlock> cached_blocks() const;

 private:
  struct Block {
    int32_t refs = 0;
    bool published = false;
    uint64_t hash = 0;
    uint64_t parent = 0;
    std::vector<int32_t> tokens;  // what the block holds, checked on lookup (hashes can collide)
    std::list<int32_t>::iterator lru_pos;
  };
  void unpublish(int32_t block);

  std::vector<Block> blocks_;
  std::vector<int32_t> free_;                   // stack; unpublished, unreferenced
  std::list<int32_t> lru_;                      // published, unreferenced; front = oldest
  std::unordered_map<uint64_t, int32_t> index_; // hash -> published block
};

}  // namespace tessera::engine
