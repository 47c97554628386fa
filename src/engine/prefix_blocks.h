// Prefix blocks that outlive an engine: the prefix cache's full KV blocks (keys and values of
// every layer) with the chain hashes and tokens that name them, copied out of one engine's KV
// pool and into another's, so a suspended model's warm prompts are still warm when it resumes
// (fleet/fleet_manager.h keeps them in the host tier meanwhile).
//
//   engine A (stopped) --export_prefix_cache(max_bytes, storage)--> PrefixBlockSet + bytes
//   PrefixBlockSet + bytes --import_prefix_cache--> engine B (not started): cached, evictable
//
// The bytes are the KV pool's own (f16 or f32 rows), so a block moves only between engines of the
// same model with the same KV format (KvBlockFormat); import refuses any other.
// Thread-safety: plain values; select_kept_blocks is a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/engine/block_allocator.h"
#include "tessera/kernels/dtype.h"

namespace tessera::engine {

struct KvBlockFormat {
  int64_t n_layers = 0;
  int64_t kv_dim = 0;
  int32_t block_size = 0;
  kernels::DType dtype = kernels::DType::kF16;
  size_t block_bytes = 0;  // keys and values of every layer for one block
  bool operator==(const KvBlockFormat&) const = default;
};

struct PrefixBlock {
  uint64_t hash = 0;
  uint64_t parent = 0;  // 0: the first block of a prompt
  std::vector<int32_t> tokens;
};

// Blocks in least-recently-used-first order; block i's bytes are at i * format.block_bytes of
// the storage they were exported into.
struct PrefixBlockSet {
  KvBlockFormat format;
  std::vector<PrefixBlock> blocks;
  size_t bytes() const { return blocks.size() * format.block_bytes; }
};

// Which cached blocks (least recently used first, as BlockAllocator::cached_blocks) to keep
// within `max_blocks`: the most recently used ones, then only those whose whole chain of parents
// is kept too (a block is found only by walking its prompt from the start, so an orphan could
// never be hit). Returns indexes into `cached`, least recently used first.
std::vector<size_t> select_kept_blocks(const std::vector<CachedBlock>& cached, int64_t max_blocks);

}  // namespace tessera::engine
