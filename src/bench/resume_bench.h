// Resume benchmark: how fast a suspended model serves again, against what the hardware allows.
// One model in a FleetManager (the serving path: the request wakes the control thread, which
// resumes the model and dispatches the request); each repetition times, from submit to the first
// token of a one-token request:
//   warm   the model Active (the floor: one prefill of the prompt),
//   host   after suspend (weights released from the process, still in the page cache),
//   disk   after suspend + evict (the file's pages dropped from the page cache too).
// The bounds they are held to: the weights' bytes at the machine's measured memory read
// bandwidth (host) and one cold sequential read of the file, timed here (disk).
// Thread-safety: runs fleets and threads of its own; call from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::bench {

struct ResumeBenchOptions {
  std::string model;          // GGUF path
  int threads = 0;            // compute threads (0: all cores)
  int io_threads = 4;         // prefaulting threads on resume
  int reps = 5;
  int prompt_tokens = 1;     // 1: the first token is one decode-sized forward pass
  int64_t ctx_size = 512;
  bool disk = true;           // also the disk tier (needs posix_fadvise to drop the page cache)
  double read_gbps = 0.0;     // memory read bandwidth; 0: measure it now
  // Prefix-cache bytes the suspended model keeps (FleetOptions::keep_prefix_bytes): with a
  // prompt of more than one block, the timed request after a resume finds its prompt cached.
  int64_t keep_prefix_bytes = int64_t{64} << 20;
};

struct ResumeBenchResult {
  int64_t weight_bytes = 0;
  int64_t kv_bytes = 0;
  double read_gbps = 0.0;               // memory read bandwidth used for the host bound
  std::vector<double> warm_ttft_s;      // per repetition
  std::vector<double> host_ttft_s;
  std::vector<double> host_resume_s;    // Resuming -> Active, inside host_ttft_s
  std::vector<double> suspend_s;        // an idle model's suspend() (prefix export, tier move)
  std::vector<double> disk_ttft_s;
  std::vector<double> disk_resume_s;    // Loading -> Active after evict
  std::vector<double> disk_read_s;      // one cold sequential read of the file
  double host_bound_s() const { return static_cast<double>(weight_bytes) / (read_gbps * 1e9); }
};

// Errors: the model's load error; kIoError when a tier move fails; kInternal when a request does
// not produce a token.
Result<ResumeBenchResult> run_resume_bench(const ResumeBenchOptions& options);

// Drops `path`'s pages from the page cache, then reads it once sequentially (8 MiB preads) and
// returns the seconds taken. Errors: kIoError.
Result<double> cold_sequential_read_seconds(const std::string& path);

}  // namespace tessera::bench
