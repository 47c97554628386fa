// MappedFile: a read-only memory map of a whole file, the zero-copy source of model weights.
// The mapping lives as long as the object; share it with std::shared_ptr when tensors point into it.
// Thread-safety: immutable after open(); reads from any thread are safe.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "tessera/base/status.h"

namespace tessera {

class MappedFile {
 public:
  // Maps `path` read-only. Opens without blocking (a FIFO or device is refused, never waited on).
  // Errors: kNotFound (no such file), kInvalidArgument (not a regular file), kIoError (cannot
  // open or map).
  // An empty file maps to an empty span.
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // Drops this process's pages of the mapping (MADV_DONTNEED): the resident set shrinks, the
  // page cache keeps the file, and later reads fault pages back in. For a loader that copied
  // what it needs. Best effort (a refusal changes nothing).
  void release_pages() const;
  // The same for the whole pages inside [p, p + n) (a part of the mapping already copied out);
  // the partial pages at either end stay. Precondition: the range lies in bytes().
  void release_range(const std::byte* p, size_t n) const;

 private:
  MappedFile() = default;
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tessera
