#include "tessera/fleet/parallel_io.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tessera/fleet/process_memory.h"

namespace tessera::fleet {

Status populate_pages(std::byte* base, size_t n, int n_threads, Fault fault, std::string_view what) {
  const size_t page = page_size();
  const int advice = fault == Fault::kRead ? MADV_POPULATE_READ : MADV_POPULATE_WRITE;
  return for_each_chunk(n, n_threads, page, [&](size_t b, size_t e) -> Status {
    if (::madvise(base + b, e - b, advice) == 0) return Status::ok();
    if (errno != EINVAL) {
      return io_error(fmt::format("{}: madvise(MADV_POPULATE_{}): {}", what,
                                  fault == Fault::kRead ? "READ" : "WRITE", std::strerror(errno)));
    }
    volatile unsigned char sink = 0;
    for (size_t off = b; off < e; off += page) {
      auto* v = reinterpret_cast<volatile unsigned char*>(base + off);
      if (fault == Fault::kRead) {
        sink = sink + *v;
      } else {
        *v = *v;
      }
    }
    return Status::ok();
  });
}

Status for_each_chunk(size_t n, int n_threads, size_t align,
                      const std::function<Status(size_t, size_t)>& fn) {
  if (n == 0) return Status::ok();
  const size_t units = (n + align - 1) / align;
  const size_t k = std::clamp<size_t>(static_cast<size_t>(std::max(n_threads, 1)), 1, units);
  const size_t per = (units + k - 1) / k;
  std::vector<Status> results(k);
  std::vector<std::thread> threads;
  auto run = [&](size_t i) {
    const size_t begin = std::min(n, i * per * align);
    const size_t end = std::min(n, (i + 1) * per * align);
    if (begin < end) results[i] = fn(begin, end);
  };
  for (size_t i = 1; i < k; ++i) threads.emplace_back(run, i);
  run(0);
  for (auto& t : threads) t.join();
  for (auto& s : results) {
    if (!s.is_ok()) return s;
  }
  return Status::ok();
}

Status pread_full(int fd, void* dst, size_t n, size_t offset, const char* what) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      return io_error(fmt::format("reading {} at offset {}: {}", what, offset,
                                  r == 0 ? "unexpected end of file" : std::strerror(errno)));
    }
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<size_t>(r);
  }
  return Status::ok();
}

Status pwrite_full(int fd, const void* src, size_t n, size_t offset, const char* what) {
  const auto* p = static_cast<const char*>(src);
  while (n > 0) {
    const ssize_t r = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      return io_error(fmt::format("writing {} at offset {}: {}", what, offset,
                                  r == 0 ? "no progress" : std::strerror(errno)));
    }
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<size_t>(r);
  }
  return Status::ok();
}

}  // namespace tessera::fleet
