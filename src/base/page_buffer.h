// PageBuffer: a zero-initialized anonymous memory region from the OS (mmap). Pages cost physical
// memory only once written, so a large pool that is used a little at a time (the KV cache) is
// cheap to create and its resident size follows what is actually in use.
// Thread-safety: the object is not synchronized; distinct bytes may be written concurrently.
#pragma once

#include <cstddef>

#include "tessera/base/status.h"

namespace tessera {

class PageBuffer {
 public:
  PageBuffer() = default;
  // Errors: kResourceExhausted when the OS refuses the mapping.
  static Result<PageBuffer> allocate(size_t bytes);
  ~PageBuffer();
  PageBuffer(PageBuffer&& other) noexcept;
  PageBuffer& operator=(PageBuffer&& other) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  // Asks for transparent huge pages (MADV_HUGEPAGE) where the kernel offers them: fewer TLB
  // misses for memory streamed end to end (weights). Best effort.
  void advise_huge_pages();

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tessera
