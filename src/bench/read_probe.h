// ReadProbe: one pass of the memory-bandwidth probe (a streaming read of a buffer far larger than
// the caches, split over a pool's threads) that can be repeated between benchmark repetitions.
// `bench machine` keeps the best of several passes as the machine's ceiling; `bench model` also
// runs a pass before and after each repetition, so a shared machine whose bandwidth moves with
// its neighbours can be compared with what it allowed while the model ran (model_bench.h).
// Thread-safety: pass() runs on the given pool; one caller at a time.
#pragma once

#include <cstdint>

#include "tessera/base/page_buffer.h"
#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"

namespace tessera::bench {

class ReadProbe {
 public:
  // Allocates and touches `bytes` (rounded down to whole 4 KiB; at least 1 MiB) on `pool`'s
  // threads, so page faults are never timed. Errors: kResourceExhausted.
  static Result<ReadProbe> create(int64_t bytes, ThreadPool& pool);

  // Reads the whole buffer once, each thread its own contiguous slice; returns GB/s (1e9 bytes).
  double pass(ThreadPool& pool) const;
  int64_t bytes() const { return n_floats_ * static_cast<int64_t>(sizeof(float)); }

 private:
  PageBuffer buffer_;
  int64_t n_floats_ = 0;
};

}  // namespace tessera::bench
