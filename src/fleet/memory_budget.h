// MemoryBudget: the accountant of one tier's capacity (the active budget from --mem-budget, or
// the host tier's). Holders reserve bytes before they take memory and release them after they
// give it back; a reservation that does not fit is refused, never overcommitted, and the caller
// (the fleet) asks the eviction policy to make room first.
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "tessera/base/status.h"

namespace tessera::fleet {

class MemoryBudget {
 public:
  // `capacity_bytes` 0 means unlimited (still accounted). Precondition: >= 0.
  explicit MemoryBudget(int64_t capacity_bytes);

  // Adds `bytes` (>= 0) to `holder`'s reservation. Errors: kResourceExhausted (nothing changes)
  // when it does not fit, naming the holder, the request, what is free and the capacity.
  Status reserve(const std::string& holder, int64_t bytes);
  // Releases everything `holder` reserved; returns how much. Unknown holders release 0.
  int64_t release(const std::string& holder);

  int64_t capacity() const { return capacity_; }
  int64_t used() const;
  // Bytes that can still be reserved (capacity - used; INT64_MAX when unlimited).
  int64_t available() const;
  int64_t held_by(const std::string& holder) const;

 private:
  const int64_t capacity_;
  mutable std::mutex mu_;
  int64_t used_ = 0;
  std::map<std::string, int64_t> holders_;
};

}  // namespace tessera::fleet
