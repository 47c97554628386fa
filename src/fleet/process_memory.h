// Process memory as the OS sees it, for tests and metrics that must show memory really released.
// Thread-safety: thread-safe (reads /proc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tessera/base/status.h"

namespace tessera::fleet {

// The resident set size of this process in bytes (/proc/self/statm). Errors: kIoError.
Result<int64_t> resident_bytes();

// Bytes of [data, data + n) whose pages are in memory (page cache or anonymous), from mincore().
// `data` need not be page aligned. Errors: kIoError.
Result<int64_t> resident_bytes_of(std::span<const std::byte> range);

// The system page size.
size_t page_size();

}  // namespace tessera::fleet
