#include "tessera/base/page_buffer.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tessera {

Result<PageBuffer> PageBuffer::allocate(size_t bytes) {
  PageBuffer b;
  if (bytes == 0) return b;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    return resource_exhausted(fmt::format("cannot map {} MiB of memory: {}", bytes >> 20,
                                          std::strerror(errno)));
  }
  b.data_ = static_cast<std::byte*>(p);
  b.size_ = bytes;
  return b;
}

void PageBuffer::advise_huge_pages() {
  if (data_ != nullptr) madvise(data_, size_, MADV_HUGEPAGE);
}

PageBuffer::~PageBuffer() {
  if (data_ != nullptr) munmap(data_, size_);
}

PageBuffer::PageBuffer(PageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace tessera
