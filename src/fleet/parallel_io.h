// Parallel chunked I/O for tier moves: split [0, n) into up to n_threads contiguous chunks whose
// boundaries are multiples of `align` (a page, so threads never fault the same page), run each on
// its own thread (the caller runs the first) and return the first error.
// Thread-safety: fn is called concurrently on disjoint chunks.
#pragma once

#include <cstddef>
#include <functional>

#include "tessera/base/status.h"

namespace tessera::fleet {

Status for_each_chunk(size_t n, int n_threads, size_t align,
                      const std::function<Status(size_t begin, size_t end)>& fn);

// Full-length pread/pwrite at `offset` (retrying short transfers and EINTR). Errors: kIoError
// naming `what`.
Status pread_full(int fd, void* dst, size_t n, size_t offset, const char* what);
Status pwrite_full(int fd, const void* src, size_t n, size_t offset, const char* what);

}  // namespace tessera::fleet
