#include "tessera/engine/prefix_blocks.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

namespace tessera::engine {

std::vector<size_t> select_kept_blocks(const std::vector<CachedBlock>& cached, int64_t max_blocks) {
  const size_t n = cached.size();
  if (n == 0 || max_blocks <= 0) return {};
  std::unordered_map<uint64_t, size_t> by_hash;
  for (size_t i = 0; i < n; ++i) by_hash.emplace(cached[i].hash, i);
  auto parent_of = [&](size_t i) -> std::ptrdiff_t {
    if (cached[i].parent == 0) return -1;
    auto it = by_hash.find(cached[i].parent);
    return it == by_hash.end() ? -1 : static_cast<std::ptrdiff_t>(it->second);
  };
  // A block is as recent as the most recent block it leads to (the prompt that used it), and
  // comes before its descendants at equal recency: ranking by (recency desc, depth asc) puts
  // every cached parent ahead of its children, so the first max_blocks are whole prefixes.
  std::vector<size_t> recency(n);
  std::iota(recency.begin(), recency.end(), size_t{0});
  for (size_t i = 0; i < n; ++i) {
    for (std::ptrdiff_t p = parent_of(i); p >= 0 && recency[static_cast<size_t>(p)] < i;
         p = parent_of(static_cast<size_t>(p))) {
      recency[static_cast<size_t>(p)] = i;
    }
  }
  std::vector<size_t> depth(n, 0);
  for (size_t i = 0; i < n; ++i) {
    size_t d = 0;
    for (std::ptrdiff_t p = parent_of(i); p >= 0 && d <= n; p = parent_of(static_cast<size_t>(p))) ++d;
    depth[i] = d;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (recency[a] != recency[b]) return recency[a] > recency[b];
    if (depth[a] != depth[b]) return depth[a] < depth[b];
    return a > b;
  });
  std::vector<bool> keep(n, false);
  const size_t take = std::min<size_t>(n, static_cast<size_t>(max_blocks));
  for (size_t k = 0; k < take; ++k) keep[order[k]] = true;
  // A block whose parent is not kept (evicted earlier, or cut by the budget) could never be hit:
  // a lookup walks a prompt from its first block. Ancestors come first in `order`, so one pass in
  // that order settles every chain.
  std::unordered_set<uint64_t> kept;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = order[k];
    if (!keep[i]) continue;
    if (cached[i].parent != 0 && kept.count(cached[i].parent) == 0) {
      keep[i] = false;
      continue;
    }
    kept.insert(cached[i].hash);
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (keep[i]) out.push_back(i);
  }
  return out;
}

}  // namespace tessera::engine
