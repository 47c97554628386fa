// ImageFileRegion: a weight image the process made itself (weights repacked into the kernels'
// layout at load) kept in an unlinked file in `dir` and mapped shared, so it moves between tiers
// as a model file's mapping does (file_backed_region.h) instead of being copied:
//   Active -> Host   madvise(MADV_DONTNEED): the pages leave the process (RSS drops) and stay in
//                    the page cache (the file's own pages: written back to disk by the kernel in
//                    its time, never lost).
//   Any    -> Disk   fdatasync + posix_fadvise(POSIX_FADV_DONTNEED): the page cache copy is
//                    dropped too; the bytes are on disk.
//   Host/Disk -> Active  madvise(MADV_POPULATE_READ) over page-aligned chunks from n threads:
//                    page-cache pages are mapped back, disk pages read in parallel. The image is
//                    only read once made (mutable_bytes() is for filling it after create()).
// Measured against the memfd image (anonymous_region.h) on TinyLlama Q4_0 (docs/PERFORMANCE.md):
// the memfd's 4 KiB shmem pages (shmem THP is off by default) made a host resume 80 ms where the
// page cache's large folios take a few, and a disk resume a copy through the memfd.
// A file system that keeps files in RAM (tmpfs) gives the same tiers without a disk behind Disk.
// Thread-safety: see memory_tier.h.
#pragma once

#include <memory>
#include <string>

#include "tessera/fleet/memory_tier.h"

namespace tessera::fleet {

class ImageFileRegion final : public TieredRegion {
 public:
  // Creates an unlinked file of `n_bytes` (> 0) in `dir` (empty: $TMPDIR, else /tmp), maps it
  // shared, Active. Errors: kInvalidArgument (n_bytes 0), kIoError (the file cannot be created
  // or sized), kResourceExhausted (mmap refused).
  static Result<std::unique_ptr<ImageFileRegion>> create(size_t n_bytes, std::string dir = {});
  ~ImageFileRegion() override;
  ImageFileRegion(const ImageFileRegion&) = delete;
  ImageFileRegion& operator=(const ImageFileRegion&) = delete;

  size_t size() const override { return size_; }
  Tier tier() const override { return tier_; }
  std::span<const std::byte> bytes() const override { return {data_, size_}; }
  // Writable view for filling the image. Precondition (checked): Active.
  std::span<std::byte> mutable_bytes();
  Result<MoveStats> move_to(Tier to, int n_threads) override;

 private:
  ImageFileRegion(std::byte* data, size_t size, int fd) : data_(data), size_(size), fd_(fd) {}
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  Tier tier_ = Tier::kActive;
};

}  // namespace tessera::fleet
