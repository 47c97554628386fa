#include "tessera/fleet/image_file_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "tessera/base/check.h"
#include "tessera/base/clock.h"
#include "tessera/fleet/parallel_io.h"
#include "tessera/fleet/process_memory.h"

namespace tessera::fleet {
namespace {

std::string errno_text() { return std::strerror(errno); }

}  // namespace

Result<std::unique_ptr<ImageFileRegion>> ImageFileRegion::create(size_t n_bytes, std::string dir) {
  if (n_bytes == 0) return invalid_argument("an ImageFileRegion needs at least one byte");
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string path = dir + "/tessera-image-XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) return io_error(fmt::format("cannot create an image file in {}: {}", dir, errno_text()));
  ::unlink(buf.data());  // nothing is left behind, whatever happens next
  if (::ftruncate(fd, static_cast<off_t>(n_bytes)) != 0) {
    const std::string err = errno_text();
    ::close(fd);
    return io_error(fmt::format("cannot size an image file in {} to {} bytes: {}", dir, n_bytes, err));
  }
  void* p = ::mmap(nullptr, n_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const std::string err = errno_text();
    ::close(fd);
    return resource_exhausted(fmt::format("cannot map {} bytes: {}", n_bytes, err));
  }
  return std::unique_ptr<ImageFileRegion>(new ImageFileRegion(static_cast<std::byte*>(p), n_bytes, fd));
}

ImageFileRegion::~ImageFileRegion() {
  if (data_ != nullptr) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
}

std::span<std::byte> ImageFileRegion::mutable_bytes() {
  TS_CHECK_MSG(tier_ == Tier::kActive, "ImageFileRegion written while not active");
  return {data_, size_};
}

Result<MoveStats> ImageFileRegion::move_to(Tier to, int n_threads) {
  MoveStats stats{tier_, to, size_, 0.0, n_threads};
  if (to == tier_) {
    stats.bytes = 0;
    return stats;
  }
  const int64_t t0 = real_clock()->now_ns();
  if (to == Tier::kActive) {
    // Read faults: the image is only read once made, and write faults would mark every folio
    // dirty again (measured: host resume of TinyLlama Q4_0 19.5 ms with MADV_POPULATE_WRITE
    // against 4.9 ms reading; docs/PERFORMANCE.md).
    TS_RETURN_IF_ERROR(populate_pages(data_, size_, n_threads, Fault::kRead, "restoring the image"));
  } else {
    if (tier_ == Tier::kActive && ::madvise(data_, size_, MADV_DONTNEED) != 0) {
      return io_error(fmt::format("releasing {} bytes: madvise(MADV_DONTNEED): {}", size_, errno_text()));
    }
    if (to == Tier::kDisk) {
      // Dirty pages cannot be dropped: write them out first.
      if (::fdatasync(fd_) != 0) return io_error("writing the image out: fdatasync: " + errno_text());
      if (const int rc = ::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED); rc != 0) {
        return io_error(fmt::format("dropping the image's page cache: posix_fadvise: {}", std::strerror(rc)));
      }
    }
  }
  tier_ = to;
  stats.seconds = static_cast<double>(real_clock()->now_ns() - t0) * 1e-9;
  return stats;
}

}  // namespace tessera::fleet
