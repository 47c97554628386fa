// Memory sizes as an operator writes them on the command line or in a config: "512M", "8G",
// "1073741824" (K, M, G, T: powers of 1024, optionally followed by "B" or "iB"), and the KV
// budget, which may also be a share of the memory available at start ("30%").
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/base/status.h"

namespace tessera::serve {

// "512M" -> 536870912. Errors: kInvalidArgument (not a number, an unknown suffix, negative).
Result<int64_t> parse_byte_size(const std::string& text);

// --kv-memory: "4G" (bytes) or "30%" (of the memory available now less `weight_bytes`). Empty:
// 0, the engine's default share. Errors: kInvalidArgument (a bad size or percentage, a zero
// size, a percentage where available memory is unknown).
// `available_bytes` >= 0 replaces the memory available now (a device's free memory, weights
// already on it: pass weight_bytes 0).
Result<int64_t> parse_kv_memory(const std::string& text, int64_t weight_bytes,
                                int64_t available_bytes = -1);

}  // namespace tessera::serve
