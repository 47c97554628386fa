#include "tessera/engine/drafter.h"

#include <algorithm>

namespace tessera::engine {

void adapt_draft_length(Sequence& seq, int32_t n_drafted, int32_t n_accepted, int32_t max_draft) {
  if (n_drafted <= 0) return;  // nothing learnt (no match, or no room)
  if (n_accepted == n_drafted) {
    seq.spec_k = std::min(max_draft, seq.spec_k + 1);
  } else {
    seq.spec_k = std::clamp(n_accepted + 1, 1, max_draft);
  }
}

}  // namespace tessera::engine
