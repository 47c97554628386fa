#include "tessera/fleet/anonymous_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "tessera/base/clock.h"
#include "tessera/fleet/parallel_io.h"
#include "tessera/fleet/process_memory.h"

namespace tessera::fleet {
namespace {

// Chunks of at most this size per copy call: large enough to run at bandwidth, small enough that
// threads share the work evenly.
constexpr size_t kIoChunk = 8u << 20;

std::string errno_text() { return std::strerror(errno); }

}  // namespace

Result<std::unique_ptr<AnonymousRegion>> AnonymousRegion::create(size_t n_bytes,
                                                                 std::string spill_dir) {
  if (n_bytes == 0) return invalid_argument("an AnonymousRegion needs at least one byte");
  const int fd = ::memfd_create("tessera-image", MFD_CLOEXEC);
  if (fd < 0) return resource_exhausted("cannot create a memfd: " + errno_text());
  if (::ftruncate(fd, static_cast<off_t>(n_bytes)) != 0) {
    const std::string err = errno_text();
    ::close(fd);
    return resource_exhausted(fmt::format("cannot size a memfd to {} bytes: {}", n_bytes, err));
  }
  void* p = ::mmap(nullptr, n_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const std::string err = errno_text();
    ::close(fd);
    return resource_exhausted(fmt::format("cannot map {} bytes: {}", n_bytes, err));
  }
  if (spill_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    spill_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  return std::unique_ptr<AnonymousRegion>(
      new AnonymousRegion(static_cast<std::byte*>(p), n_bytes, fd, std::move(spill_dir)));
}

AnonymousRegion::~AnonymousRegion() {
  if (data_ != nullptr) ::munmap(data_, size_);
  if (memfd_ >= 0) ::close(memfd_);
  if (spill_fd_ >= 0) ::close(spill_fd_);
}

std::span<std::byte> AnonymousRegion::mutable_bytes() {
  TS_CHECK_MSG(tier_ == Tier::kActive, "AnonymousRegion written while not active");
  return {data_, size_};
}

Result<int> AnonymousRegion::open_spill_file() {
  std::string path = spill_dir_ + "/tessera-spill-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) {
    return io_error(fmt::format("cannot create a spill file in {}: {}", spill_dir_, errno_text()));
  }
  ::unlink(buf.data());  // nothing is left behind, whatever happens next
  if (::ftruncate(fd, static_cast<off_t>(size_)) != 0) {
    const std::string err = errno_text();
    ::close(fd);
    return io_error(fmt::format("cannot size a spill file in {} to {} bytes: {}", spill_dir_,
                                size_, err));
  }
  return fd;
}

Status AnonymousRegion::copy_fd(int from, int to, int n_threads, const char* what) {
  return for_each_chunk(size_, n_threads, kIoChunk, [&](size_t b, size_t e) -> Status {
    std::vector<std::byte> buf(std::min(e - b, kIoChunk));
    for (size_t off = b; off < e; off += buf.size()) {
      const size_t n = std::min(buf.size(), e - off);
      TS_RETURN_IF_ERROR(pread_full(from, buf.data(), n, off, what));
      TS_RETURN_IF_ERROR(pwrite_full(to, buf.data(), n, off, what));
    }
    return Status::ok();
  });
}

Status AnonymousRegion::unmap_pages() {
  if (::madvise(data_, size_, MADV_DONTNEED) != 0) {
    return io_error(fmt::format("releasing {} bytes: madvise(MADV_DONTNEED): {}", size_,
                                errno_text()));
  }
  return Status::ok();
}

Status AnonymousRegion::populate(int n_threads) {
  return populate_pages(data_, size_, n_threads, Fault::kWrite, "restoring the image");
}

Status AnonymousRegion::punch_memfd() {
  // Whole pages: a partial last page would only be zeroed, not freed.
  const size_t rounded = (size_ + page_size() - 1) / page_size() * page_size();
  if (::fallocate(memfd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                  static_cast<off_t>(rounded)) != 0) {
    return io_error("freeing the host image: fallocate(PUNCH_HOLE): " + errno_text());
  }
  return Status::ok();
}

Result<MoveStats> AnonymousRegion::move_to(Tier to, int n_threads) {
  MoveStats stats{tier_, to, size_, 0.0, n_threads};
  if (to == tier_) {
    stats.bytes = 0;
    return stats;
  }
  const int64_t t0 = real_clock()->now_ns();
  if (to == Tier::kDisk) {
    // Write the spill file completely before giving up the RAM copy.
    TS_ASSIGN_OR_RETURN(int fd, open_spill_file());
    Status st = copy_fd(memfd_, fd, n_threads, "the image being spilled");
    if (!st.is_ok()) {
      ::close(fd);
      return st.with_context(fmt::format("moving {} -> disk", tier_name(tier_)));
    }
    spill_fd_ = fd;
    // Disk means disk: write the file out and drop its page cache copy, or the RAM would only
    // have moved from the memfd to the page cache (best effort, as FileBackedRegion does).
    if (::fdatasync(fd) == 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (tier_ == Tier::kActive) TS_RETURN_IF_ERROR(unmap_pages());
    TS_RETURN_IF_ERROR(punch_memfd());
  } else {
    if (tier_ == Tier::kDisk) {
      Status st = copy_fd(spill_fd_, memfd_, n_threads, "the spilled image");
      if (!st.is_ok()) return st.with_context(fmt::format("moving disk -> {}", tier_name(to)));
      ::close(spill_fd_);
      spill_fd_ = -1;
    }
    if (to == Tier::kActive) {
      TS_RETURN_IF_ERROR(populate(n_threads));
    } else if (tier_ == Tier::kActive) {
      TS_RETURN_IF_ERROR(unmap_pages());
    }
  }
  tier_ = to;
  stats.seconds = static_cast<double>(real_clock()->now_ns() - t0) * 1e-9;
  return stats;
}

}  // namespace tessera::fleet
