// KvManager: owns the engine's paged KV cache and everything about its blocks: the sequence
// slots, the block allocator with its prefix cache (chain-hashed full blocks, LRU eviction),
// growth of a sequence's block table, lookahead blocks for draft tokens and their rollback when
// drafts are rejected. Only verified tokens are ever published to the prefix cache: a block is
// published once every position in it holds a token whose K/V was computed and accepted
// (positions below Sequence::n_computed). It also holds the one function that sizes a KV pool,
// which the fleet calls to budget memory.
//
//   scheduler ──grow(seq, n) / n_available──> KvManager ──allocate/lookup/publish──> BlockAllocator
//   engine    ──publish_verified / rollback / release──┘        └─block tables──> model::KvCache
//
// Thread-safety: not synchronized; owned by the engine's scheduler thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/engine/block_allocator.h"
#include "tessera/engine/engine_options.h"
#include "tessera/engine/prefix_blocks.h"
#include "tessera/engine/sequence.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/model_config.h"

namespace tessera::engine {

// A KV pool's size as an engine with these options will allocate it (defaults resolved).
struct KvPoolSize {
  int64_t ctx_size = 0;      // positions per sequence
  int64_t blocks_per_seq = 0;
  int64_t n_blocks = 0;
  int64_t block_bytes = 0;   // K and V of every layer for one block
  int64_t bytes() const { return n_blocks * block_bytes; }
};
// The one KV-pool sizing rule (Engine::create and the fleet's budgets both use it):
// options.n_blocks when set; otherwise what max_running sequences of ctx_size positions need,
// capped by options.kv_memory_bytes when that is set (0: no cap). Errors: kInvalidArgument for
// bad sizes or a pool that cannot hold one sequence (naming the budget and what one sequence
// needs), kResourceExhausted for an absurd pool.
Result<KvPoolSize> size_kv_pool(const model::ModelConfig& config, const EngineOptions& options);

// The share of (available memory - weights) a KV pool takes by default.
inline constexpr double kDefaultKvMemoryShare = 0.5;
// `share` of (available_bytes - weight_bytes), never below 0: an engine's default KV budget,
// with available_bytes from available_memory_bytes() at start and weight_bytes the model's
// tensors (their mapped file pages count as available, so they are taken off first).
int64_t kv_memory_share(int64_t available_bytes, int64_t weight_bytes, double share);
// Memory the system can give without swapping (MemAvailable in /proc/meminfo); 0 when unknown.
int64_t available_memory_bytes();
// The KV budget for `weight_bytes` of weights: kv_memory_share(available_memory_bytes(),
// weight_bytes, share), at least 1 (so a machine without room gets size_kv_pool's error naming
// the budget, not an unbounded pool); 0 when available memory is unknown (no cap).
int64_t default_kv_memory_bytes(int64_t weight_bytes, double share = kDefaultKvMemoryShare);

class KvManager {
 public:
  // `size` from size_kv_pool. Errors: the cache's (kResourceExhausted).
  static Result<KvManager> create(const model::ModelConfig& config, const EngineOptions& options,
                                  const KvPoolSize& size);

  model::KvCache& cache() { return cache_; }
  const model::KvCache& cache() const { return cache_; }
  const BlockAllocator& allocator() const { return blocks_; }
  int32_t block_size() const { return block_size_; }
  bool prefix_cache() const { return prefix_cache_; }
  int32_t n_available() const { return blocks_.n_available(); }

  bool has_free_slot() const { return !free_slots_.empty(); }
  // Gives `s` a sequence slot. Precondition (checked): has_free_slot().
  void assign_slot(Sequence& s);

  // Takes references to the cached blocks of s's longest cached prefix and sets s.n_computed to
  // the positions they cover. The last token is never covered (it must run to produce logits),
  // so shared blocks are only ever read. Returns the number of blocks found.
  int64_t take_cached_prefix(Sequence& s);
  // Blocks s must still get to hold `n_positions` positions.
  int64_t blocks_to_grow(const Sequence& s, int64_t n_positions) const;
  // Allocates blocks until s holds `n_positions` positions and points its slot's block table at
  // them. Precondition (checked): blocks_to_grow(s, n_positions) <= n_available().
  void grow(Sequence& s, int64_t n_positions);
  // Publishes s's full blocks whose every position is verified (below s.n_computed) and not yet
  // published.
  void publish_verified(Sequence& s);
  // Releases s's blocks past those holding its n_computed positions: the lookahead blocks of
  // rejected drafts. The K/V written at rejected positions inside kept blocks is overwritten
  // when those positions run again; nothing reads it before (attention stops at each row's
  // position).
  void rollback(Sequence& s);
  // Drops every block reference of s (last block first, so the prefix cache evicts a prompt's
  // tail before its head), its published hashes and n_computed; keeps its slot.
  void drop_blocks(Sequence& s);
  // drop_blocks and frees its slot.
  void release(Sequence& s);

  // Prefix blocks across engines (engine/prefix_blocks.h); see Engine.
  KvBlockFormat block_format() const;
  using BlockStorage = std::function<Result<std::span<std::byte>>(size_t n_bytes)>;
  Result<PrefixBlockSet> export_prefix_cache(int64_t max_bytes, const BlockStorage& storage) const;
  Result<int64_t> import_prefix_cache(const PrefixBlockSet& set, std::span<const std::byte> bytes);

 private:
  KvManager(model::KvCache cache, int32_t n_slots, bool prefix_cache);

  model::KvCache cache_;
  BlockAllocator blocks_;
  std::vector<int32_t> free_slots_;
  int32_t block_size_;
  bool prefix_cache_;
};

}  // namespace tessera::engine
