// The prompts of `bench serve`: a trace replayed (with its arrival times), a JSONL prompt file,
// or synthetic prompts of the given length distributions; exact token ids where a tokenizer is
// known, else text of the right byte count. `description` records which, for summary.json.
// Thread-safety: pure function.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/bench/query_sample_library.h"
#include "tessera/bench/serve_bench_options.h"

namespace tessera::bench {

struct ServeWorkload {
  InMemoryLibrary library;
  std::vector<double> trace_times_s;  // a trace's arrivals; empty otherwise
  nlohmann::json description;
};

// `tokenizer` may be null. Errors: bad length specs, an unreadable or malformed prompt file or
// trace.
Result<ServeWorkload> make_serve_workload(const ServeBenchOptions& options,
                                          const model::Tokenizer* tokenizer);

}  // namespace tessera::bench
