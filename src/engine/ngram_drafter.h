// NgramDrafter (prompt lookup decoding): drafts by finding the most recent earlier occurrence of
// the sequence's last n tokens (n from ngram_max down to ngram_min) in its own prompt and output,
// and proposing the tokens that followed it. Each sequence keeps an index (one hash table per n,
// n-gram -> the position after its latest occurrence), extended by the tokens added since the
// last call, so a lookup costs O(ngram_max) however long the sequence is. Needs no model; wins
// on input-grounded generation (rewriting, summarizing, code edits) where output repeats input.
// Thread-safety: engine scheduler thread only.
#pragma once

#include "tessera/engine/drafter.h"

namespace tessera::engine {

class NgramDrafter final : public Drafter {
 public:
  // Preconditions (checked): 1 <= ngram_min <= ngram_max <= 16.
  NgramDrafter(int32_t ngram_min, int32_t ngram_max);
  std::string_view name() const override { return "ngram"; }
  Status propose(std::span<const DraftRequest> requests, ThreadPool* pool) override;
  // Drafts at most `max_tokens` continuing `tokens` into `out`; the index lives in `state`
  // (made on first use, extended by the tokens added since; `tokens` only ever grows).
  void draft(std::span<const int32_t> tokens, int32_t max_tokens,
             std::unique_ptr<DraftState>& state, std::vector<int32_t>& out) const;

 private:
  int32_t ngram_min_;
  int32_t ngram_max_;
};

}  // namespace tessera::engine
