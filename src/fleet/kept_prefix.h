// KeptPrefix: the prefix-cache blocks a model keeps while it is suspended or evicted, so warm
// prompts stay warm across a suspension: exported from the engine that goes (most recently used
// whole prefixes, up to a byte cap) into an anonymous region that follows the weights down the
// tiers, and imported into the next engine's prefix cache on resume.
// Thread-safety: none; its owner (the live host) serializes; the counts are atomics so status
// readers on other threads see them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "tessera/engine/engine.h"
#include "tessera/fleet/anonymous_region.h"

namespace tessera::fleet {

class KeptPrefix {
 public:
  // Replaces what is kept with `e`'s most recently used prefix blocks, up to `max_bytes` (0:
  // none), in the host tier. A failure is logged and keeps nothing. `model` names it in logs.
  void keep(const engine::Engine& e, int64_t max_bytes, const std::string& model);
  // Puts the kept blocks into `e`'s prefix cache and drops them here (logged on failure).
  void restore(engine::Engine& e, int io_threads, const std::string& model);
  // Follows the weights to disk; on failure the blocks are dropped.
  void evict(int io_threads, const std::string& model);
  void drop();

  int64_t blocks() const { return blocks_; }
  int64_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<AnonymousRegion> region_;
  engine::PrefixBlockSet set_;
  std::atomic<int64_t> blocks_{0};
  std::atomic<int64_t> bytes_{0};
};

}  // namespace tessera::fleet
