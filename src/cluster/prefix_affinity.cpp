#include "tessera/cluster/prefix_affinity.h"

#include <algorithm>

namespace tessera::cluster {
namespace {

// FNV-1a over the block, seeded with the previous block's key: a key names the whole prefix.
uint64_t chain(uint64_t prev, std::string_view block) {
  uint64_t h = prev ^ 0xcbf29ce484222325ull;
  for (char c : block) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

PrefixAffinity::PrefixAffinity(size_t block_chars, size_t max_blocks)
    : block_chars_(std::max<size_t>(block_chars, 1)), max_blocks_(std::max<size_t>(max_blocks, 1)) {}

void PrefixAffinity::match(std::string_view text, std::span<int32_t> out) const {
  std::fill(out.begin(), out.end(), 0);
  const auto n = static_cast<int32_t>(std::min<size_t>(out.size(), kMaxReplicas));
  uint64_t still = n >= 64 ? ~0ull : ((1ull << n) - 1);  // replicas matching every block so far
  uint64_t key = 0;
  for (size_t at = 0; at + block_chars_ <= text.size() && still != 0; at += block_chars_) {
    key = chain(key, text.substr(at, block_chars_));
    const auto it = entries_.find(key);
    if (it == entries_.end()) break;
    still &= it->second.replicas;
    for (int32_t r = 0; r < n; ++r) {
      if ((still >> r) & 1u) ++out[static_cast<size_t>(r)];
    }
  }
}

void PrefixAffinity::record(std::string_view text, int32_t replica) {
  if (replica < 0 || replica >= kMaxReplicas) return;
  uint64_t key = 0;
  for (size_t at = 0; at + block_chars_ <= text.size(); at += block_chars_) {
    key = chain(key, text.substr(at, block_chars_));
    auto [it, fresh] = entries_.try_emplace(key);
    if (fresh) {
      lru_.push_front(key);
    } else {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
    }
    it->second.lru = lru_.begin();
    it->second.replicas |= 1ull << replica;
  }
  while (entries_.size() > max_blocks_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
}

void PrefixAffinity::forget(int32_t replica) {
  if (replica < 0 || replica >= kMaxReplicas) return;
  for (auto it = entries_.begin(); it != entries_.end();) {
    it->second.replicas &= ~(1ull << replica);
    if (it->second.replicas == 0) {
      lru_.erase(it->second.lru);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace tessera::cluster
