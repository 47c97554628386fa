#include "tessera/engine/batch_policy.h"

#include <algorithm>

namespace tessera::engine {

int64_t running_cap(const BatchLimits& limits) {
  return std::min(limits.max_running, limits.max_batch_tokens);
}

std::vector<BatchRow> compose_rows(std::span<const int64_t> pending, int64_t max_batch_tokens,
                                   int64_t* budget_left) {
  std::vector<BatchRow> rows;
  int64_t budget = max_batch_tokens;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i] == 1 && budget > 0) {
      rows.push_back({i, 1});
      --budget;
    }
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i] > 1 && budget > 0) {
      const int64_t n = std::min(pending[i], budget);
      rows.push_back({i, n});
      budget -= n;
    }
  }
  if (budget_left != nullptr) *budget_left = budget;
  return rows;
}

}  // namespace tessera::engine
