// Parallel chunked I/O for tier moves: split [0, n) into up to n_threads contiguous chunks whose
// boundaries are multiples of `align` (a page, so threads never fault the same page), run each on
// its own thread (the caller runs the first) and return the first error.
// Thread-safety: fn is called concurrently on disjoint chunks.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "tessera/base/status.h"

namespace tessera::fleet {

Status for_each_chunk(size_t n, int n_threads, size_t align,
                      const std::function<Status(size_t begin, size_t end)>& fn);

// Maps the pages of [base, base + n) into the process from up to n_threads threads (page-aligned
// chunks) with madvise(MADV_POPULATE_READ or _WRITE): page-cache pages are mapped, missing ones
// read from disk or zero-filled, in parallel. Kernels before 5.14 (EINVAL) get one touch per page
// instead (a read, or a write of the byte's own value). Errors: kIoError naming `what`.
enum class Fault { kRead, kWrite };
Status populate_pages(std::byte* base, size_t n, int n_threads, Fault fault, std::string_view what);

// Full-length pread/pwrite at `offset` (retrying short transfers and EINTR). Errors: kIoError
// naming `what`.
Status pread_full(int fd, void* dst, size_t n, size_t offset, const char* what);
Status pwrite_full(int fd, const void* src, size_t n, size_t offset, const char* what);

}  // namespace tessera::fleet
