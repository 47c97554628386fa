#include "tessera/fleet/memory_budget.h"

#include <limits>

#include <fmt/format.h>

namespace tessera::fleet {

MemoryBudget::MemoryBudget(int64_t capacity_bytes) : capacity_(capacity_bytes) {
  TS_CHECK(capacity_bytes >= 0);
}

Status MemoryBudget::reserve(const std::string& holder, int64_t bytes) {
  TS_CHECK(bytes >= 0);
  std::lock_guard lock(mu_);
  if (capacity_ > 0 && bytes > capacity_ - used_) {
    return resource_exhausted(fmt::format(
        "'{}' needs {:.1f} MiB but {:.1f} MiB of the {:.1f} MiB budget are free; raise the budget "
        "or suspend other models",
        holder, bytes / 1048576.0, (capacity_ - used_) / 1048576.0, capacity_ / 1048576.0));
  }
  used_ += bytes;
  holders_[holder] += bytes;
  return Status::ok();
}

int64_t MemoryBudget::release(const std::string& holder) {
  std::lock_guard lock(mu_);
  auto it = holders_.find(holder);
  if (it == holders_.end()) return 0;
  const int64_t n = it->second;
  used_ -= n;
  holders_.erase(it);
  return n;
}

int64_t MemoryBudget::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

int64_t MemoryBudget::available() const {
  std::lock_guard lock(mu_);
  return capacity_ == 0 ? std::numeric_limits<int64_t>::max() : capacity_ - used_;
}

int64_t MemoryBudget::held_by(const std::string& holder) const {
  std::lock_guard lock(mu_);
  auto it = holders_.find(holder);
  return it == holders_.end() ? 0 : it->second;
}

}  // namespace tessera::fleet
