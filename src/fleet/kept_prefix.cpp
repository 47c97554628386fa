#include "tessera/fleet/kept_prefix.h"

#include "tessera/base/log.h"

namespace tessera::fleet {

void KeptPrefix::drop() {
  region_.reset();
  set_ = {};
  blocks_ = 0;
  bytes_ = 0;
}

void KeptPrefix::keep(const engine::Engine& e, int64_t max_bytes, const std::string& model) {
  drop();
  if (max_bytes <= 0) return;
  std::unique_ptr<AnonymousRegion> region;
  auto set = e.export_prefix_cache(max_bytes, [&region](size_t n) -> Result<std::span<std::byte>> {
    TS_ASSIGN_OR_RETURN(region, AnonymousRegion::create(n));
    return region->mutable_bytes();
  });
  if (!set.is_ok()) {
    log_warn("fleet: {}: its prefix blocks are not kept: {}", model, set.status().message());
    return;
  }
  if (region == nullptr) return;  // nothing cached
  if (auto moved = region->move_to(Tier::kHost, 1); !moved.is_ok()) {
    log_warn("fleet: {}: its prefix blocks are not kept: {}", model, moved.status().message());
    return;
  }
  blocks_ = static_cast<int64_t>(set->blocks.size());
  bytes_ = static_cast<int64_t>(region->size());
  set_ = std::move(set).value();
  region_ = std::move(region);
}

void KeptPrefix::restore(engine::Engine& e, int io_threads, const std::string& model) {
  if (region_ == nullptr) return;
  auto moved = region_->move_to(Tier::kActive, io_threads);
  if (moved.is_ok()) {
    auto taken = e.import_prefix_cache(set_, region_->bytes());
    if (!taken.is_ok()) {
      log_warn("fleet: {}: kept prefix blocks not restored: {}", model, taken.status().message());
    } else {
      log_info("fleet: {}: {} of {} kept prefix blocks restored", model, *taken, set_.blocks.size());
    }
  } else {
    log_warn("fleet: {}: kept prefix blocks not restored: {}", model, moved.status().message());
  }
  drop();  // in the engine's pool now (or lost): the region goes
}

void KeptPrefix::evict(int io_threads, const std::string& model) {
  if (region_ == nullptr) return;
  auto moved = region_->move_to(Tier::kDisk, io_threads);
  if (!moved.is_ok()) {
    log_warn("fleet: {}: dropping its kept prefix blocks: {}", model, moved.status().message());
    drop();
  }
}

}  // namespace tessera::fleet
