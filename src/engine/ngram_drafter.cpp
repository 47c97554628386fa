#include "tessera/engine/ngram_drafter.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "tessera/base/check.h"

namespace tessera::engine {

namespace {

uint64_t ngram_hash(std::span<const int32_t> toks) {
  uint64_t h = 0x84222325cbf29ce4ull ^ toks.size();
  for (int32_t t : toks) {
    h ^= static_cast<uint32_t>(t) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  return h;
}

// Per sequence: for each n, n-gram hash -> the position right after its latest occurrence whose
// continuation is known (so always < the number of tokens indexed).
struct NgramIndex final : DraftState {
  explicit NgramIndex(int32_t n_max) : maps(static_cast<size_t>(n_max) + 1) {}
  std::vector<std::unordered_map<uint64_t, int32_t>> maps;
  int64_t n_indexed = 0;
};

}  // namespace

NgramDrafter::NgramDrafter(int32_t ngram_min, int32_t ngram_max)
    : ngram_min_(ngram_min), ngram_max_(ngram_max) {
  TS_CHECK(1 <= ngram_min && ngram_min <= ngram_max && ngram_max <= 16);
}

void NgramDrafter::draft(std::span<const int32_t> tokens, int32_t max_tokens,
                         std::unique_ptr<DraftState>& state, std::vector<int32_t>& out) const {
  out.clear();
  auto* index = dynamic_cast<NgramIndex*>(state.get());
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  if (index == nullptr || index->n_indexed > n_tokens) {
    state = std::make_unique<NgramIndex>(ngram_max_);
    index = static_cast<NgramIndex*>(state.get());
  }
  // Index every n-gram that ends at e (exclusive) and has a continuation tokens[e], e < n_tokens.
  for (int64_t e = std::max<int64_t>(index->n_indexed, 1); e < n_tokens; ++e) {
    for (int32_t n = ngram_min_; n <= ngram_max_ && n <= e; ++n) {
      const uint64_t h = ngram_hash(tokens.subspan(static_cast<size_t>(e - n), static_cast<size_t>(n)));
      index->maps[static_cast<size_t>(n)][h] = static_cast<int32_t>(e);
    }
  }
  index->n_indexed = n_tokens;
  if (max_tokens <= 0) return;
  for (int32_t n = std::min<int64_t>(ngram_max_, n_tokens - 1); n >= ngram_min_; --n) {
    const std::span<const int32_t> suffix =
        tokens.subspan(static_cast<size_t>(n_tokens - n), static_cast<size_t>(n));
    const auto& map = index->maps[static_cast<size_t>(n)];
    const auto it = map.find(ngram_hash(suffix));
    if (it == map.end()) continue;
    const int64_t e = it->second;
    // Hashes can collide: compare the tokens.
    if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + (e - n))) continue;
    // Copy what followed; past the end of `tokens` the copy reads its own output (a repeating
    // pattern continues).
    for (int64_t j = 0; j < max_tokens; ++j) {
      const int64_t src = e + j;
      out.push_back(src < n_tokens ? tokens[static_cast<size_t>(src)]
                                   : out[static_cast<size_t>(src - n_tokens)]);
    }
    return;
  }
}

Status NgramDrafter::propose(std::span<const DraftRequest> requests, ThreadPool* /*pool*/) {
  for (const DraftRequest& r : requests) {
    Sequence& s = *r.seq;
    s.draft_q.clear();
    draft(s.tokens, r.max_tokens, s.draft_state, s.draft);
  }
  return Status::ok();
}

}  // namespace tessera::engine
