#include "tessera/fleet/file_backed_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "tessera/base/clock.h"
#include "tessera/fleet/parallel_io.h"
#include "tessera/fleet/process_memory.h"

namespace tessera::fleet {
namespace {

void* mutable_addr(const std::byte* p) { return const_cast<std::byte*>(p); }  // madvise's type

}  // namespace

FileBackedRegion::FileBackedRegion(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {
  TS_CHECK(file_ != nullptr);
  Result<int64_t> resident = resident_bytes_of(file_->bytes());
  tier_ = resident.is_ok() && *resident > 0 ? Tier::kHost : Tier::kDisk;
}

Status FileBackedRegion::release_pages() {
  if (size() == 0) return Status::ok();
  if (::madvise(mutable_addr(file_->bytes().data()), size(), MADV_DONTNEED) != 0) {
    return io_error(fmt::format("releasing the pages of {}: madvise(MADV_DONTNEED): {}",
                                file_->path(), std::strerror(errno)));
  }
  return Status::ok();
}

Status FileBackedRegion::drop_page_cache() {
  const int fd = ::open(file_->path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return io_error(fmt::format("dropping the page cache of {}: {}", file_->path(),
                                std::strerror(errno)));
  }
  // Dirty pages are not dropped; a freshly written model file may still be dirty.
  (void)::fdatasync(fd);
  const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  if (rc != 0) {
    return io_error(fmt::format("dropping the page cache of {}: posix_fadvise: {}", file_->path(),
                                std::strerror(rc)));
  }
  return Status::ok();
}

Status FileBackedRegion::populate(int n_threads) {
  return populate_pages(static_cast<std::byte*>(mutable_addr(file_->bytes().data())), size(),
                        n_threads, Fault::kRead, "reading " + file_->path() + " back");
}

Result<MoveStats> FileBackedRegion::move_to(Tier to, int n_threads) {
  MoveStats stats{tier_, to, size(), 0.0, n_threads};
  if (to == tier_) {
    stats.bytes = 0;
    return stats;
  }
  const int64_t t0 = real_clock()->now_ns();
  if (to == Tier::kActive) {
    TS_RETURN_IF_ERROR(populate(n_threads));
  } else {
    if (tier_ == Tier::kActive) TS_RETURN_IF_ERROR(release_pages());
    if (to == Tier::kDisk) TS_RETURN_IF_ERROR(drop_page_cache());
  }
  tier_ = to;
  stats.seconds = static_cast<double>(real_clock()->now_ns() - t0) * 1e-9;
  return stats;
}

}  // namespace tessera::fleet
