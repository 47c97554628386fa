#include "tessera/fleet/process_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::fleet {

size_t page_size() {
  static const size_t kPage = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return kPage;
}

Result<int64_t> resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return io_error(std::string("cannot open /proc/self/statm: ") + std::strerror(errno));
  long long size_pages = 0, resident_pages = 0;
  const int n = std::fscanf(f, "%lld %lld", &size_pages, &resident_pages);
  std::fclose(f);
  if (n != 2) return io_error("cannot parse /proc/self/statm");
  return static_cast<int64_t>(resident_pages) * static_cast<int64_t>(page_size());
}

Result<int64_t> resident_bytes_of(std::span<const std::byte> range) {
  if (range.empty()) return int64_t{0};
  const size_t page = page_size();
  const auto addr = reinterpret_cast<uintptr_t>(range.data());
  const uintptr_t begin = addr & ~(page - 1);
  const uintptr_t end = addr + range.size();
  const size_t n_pages = (end - begin + page - 1) / page;
  std::vector<unsigned char> vec(n_pages);
  if (::mincore(reinterpret_cast<void*>(begin), end - begin, vec.data()) != 0) {
    return io_error(std::string("mincore failed: ") + std::strerror(errno));
  }
  int64_t n = 0;
  for (unsigned char v : vec) n += (v & 1) != 0;
  return n * static_cast<int64_t>(page);
}

}  // namespace tessera::fleet
