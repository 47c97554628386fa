// AnonymousRegion: bytes the process made itself (the fleet keeps a suspended model's prefix-cache
// blocks in one; weights repacked at load use ImageFileRegion instead) as a TieredRegion. The image
// lives in a memfd mapped shared at a fixed address for the region's life, so pointers into it
// stay valid and, on a CPU, Active and Host are the same RAM seen two ways:
//   Active -> Host   madvise(MADV_DONTNEED) unmaps the pages: RSS drops, the memfd keeps them
//                    (counted against the host budget instead); no copy.
//   Host -> Active   madvise(MADV_POPULATE_WRITE) from n threads maps them back; no copy.
//   Active/Host -> Disk  copy the memfd into a spill file in `spill_dir` (created, then unlinked
//                    at once so nothing is left behind) from n threads, write it out and drop
//                    its page cache copy (fdatasync + POSIX_FADV_DONTNEED, best effort), then
//                    punch the memfd's pages out: the RAM is given back to the system.
//   Disk -> Active/Host  parallel copy from the spill file back into the memfd (then populate).
// A GPU tier would copy where this one remaps; the interface is the same.
// Outside Active, reading bytes() faults pages back in (Host) or reads zeros (Disk): only the
// owner's model may point into it and it must not run while suspended.
// Thread-safety: see memory_tier.h.
#pragma once

#include <memory>
#include <string>

#include "tessera/fleet/memory_tier.h"

namespace tessera::fleet {

class AnonymousRegion final : public TieredRegion {
 public:
  // Maps `n_bytes` (> 0) of zeroed memory (a memfd), Active. `spill_dir` is where Disk images go
  // (empty: the system temporary directory). Errors: kInvalidArgument (n_bytes 0),
  // kResourceExhausted (mmap refused).
  static Result<std::unique_ptr<AnonymousRegion>> create(size_t n_bytes,
                                                         std::string spill_dir = {});
  ~AnonymousRegion() override;
  AnonymousRegion(const AnonymousRegion&) = delete;
  AnonymousRegion& operator=(const AnonymousRegion&) = delete;

  size_t size() const override { return size_; }
  Tier tier() const override { return tier_; }
  std::span<const std::byte> bytes() const override { return {data_, size_}; }
  // Writable view for filling the image. Precondition (checked): Active.
  std::span<std::byte> mutable_bytes();
  Result<MoveStats> move_to(Tier to, int n_threads) override;

 private:
  AnonymousRegion(std::byte* data, size_t size, int memfd, std::string spill_dir)
      : data_(data), size_(size), spill_dir_(std::move(spill_dir)), memfd_(memfd) {}
  Result<int> open_spill_file();
  Status copy_fd(int from, int to, int n_threads, const char* what);
  Status unmap_pages();
  Status populate(int n_threads);
  Status punch_memfd();
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string spill_dir_;
  Tier tier_ = Tier::kActive;
  int memfd_ = -1;  // the image in RAM (Active and Host)
  int spill_fd_ = -1;  // the unlinked spill file (Disk)
};

}  // namespace tessera::fleet
