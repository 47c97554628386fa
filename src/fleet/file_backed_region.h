// FileBackedRegion: a model file's read-only mapping (base/mapped_file.h) as a TieredRegion. This
// is what a GGUF model holds today: the loader points its tensors straight into the file mapping
// (model/format/model_file.h), so the kernel-ready weights are the file's pages.
//   Active -> Host   madvise(MADV_DONTNEED): the pages leave this process (RSS drops) and stay in
//                    the page cache, so the host image costs no copy. The page cache is the
//                    kernel's to reclaim: under system pressure a "host" resume may read disk.
//   Any    -> Disk   also fsync + posix_fadvise(POSIX_FADV_DONTNEED): the page cache copy is
//                    dropped too (best effort: pages another process maps stay).
//   Host/Disk -> Active  madvise(MADV_POPULATE_READ) over page-aligned chunks from n threads, so
//                    page-table setup and disk reads proceed in parallel (touching one byte per
//                    page where the kernel predates MADV_POPULATE_READ, Linux 5.14).
// Reading bytes() in any tier is safe (pages fault back in); it is only slower.
// Thread-safety: see memory_tier.h.
#pragma once

#include <memory>

#include "tessera/base/mapped_file.h"
#include "tessera/fleet/memory_tier.h"

namespace tessera::fleet {

class FileBackedRegion final : public TieredRegion {
 public:
  // Shares `file` (non-null). Starts as Disk when none of its pages are resident, else Host: the
  // loader has not prefaulted anything yet either way; call move_to(kActive) to do so.
  explicit FileBackedRegion(std::shared_ptr<const MappedFile> file);

  size_t size() const override { return file_->bytes().size(); }
  Tier tier() const override { return tier_; }
  std::span<const std::byte> bytes() const override { return file_->bytes(); }
  Result<MoveStats> move_to(Tier to, int n_threads) override;

 private:
  Status release_pages();
  Status drop_page_cache();
  Status populate(int n_threads);
  std::shared_ptr<const MappedFile> file_;
  Tier tier_ = Tier::kDisk;
};

}  // namespace tessera::fleet
