// Memory tiers: where a model's bytes live. A TieredRegion is one contiguous image (a model's
// weights in the kernels' layout) whose address stays fixed while its backing moves between
//   Active  resident in this process and counted against the active budget (later: GPU memory),
//   Host    an image in RAM outside the process's working set: the page cache for file-backed
//           weights, a memfd for anonymous ones (later: pinned host memory),
//   Disk    only on disk (the model file, or a spill file).
// Moving down releases the memory for real (the resident set shrinks); moving up restores the
// image with parallel, prefaulting reads so the first forward step does not fault page by page.
// Thread-safety: a region is moved by one thread at a time (the fleet's control thread); bytes()
// may be read from other threads only while the region is Active and not being moved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "tessera/base/status.h"

namespace tessera::fleet {

enum class Tier : uint8_t { kActive, kHost, kDisk };
std::string_view tier_name(Tier t);  // "active", "host", "disk"

// What one move did, for metrics and benchmarks.
struct MoveStats {
  Tier from = Tier::kActive;
  Tier to = Tier::kActive;
  size_t bytes = 0;       // bytes moved or released
  double seconds = 0.0;   // wall time of the move
  int n_threads = 1;
  double gib_per_s() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / (1u << 30) : 0.0; }
};

class TieredRegion {
 public:
  virtual ~TieredRegion() = default;
  virtual size_t size() const = 0;
  virtual Tier tier() const = 0;
  // The image's fixed address. Reading it outside Active is allowed only where the
  // implementation says so (file-backed regions fault pages back in; anonymous ones read zeros).
  virtual std::span<const std::byte> bytes() const = 0;
  // Moves the image to `to` using up to `n_threads` threads (>= 1) for copies and prefaulting.
  // Moving to the current tier does nothing. Errors: kUnsupported for a move the region does not
  // offer, kIoError when the OS refuses (the region stays in its old tier if it can; the message
  // says otherwise).
  virtual Result<MoveStats> move_to(Tier to, int n_threads) = 0;
};

}  // namespace tessera::fleet
