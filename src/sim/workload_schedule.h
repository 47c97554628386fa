// The schedule workload: an exact arrival schedule, as `tessera bench fleet --arrivals-out`
// writes it, one request a line: `model,t_s,input_tokens,output_tokens` (a header line first).
// Models are numbered in order of first appearance. This is how the simulator replays the very
// arrivals a live fleet run served (docs/SIMULATOR.md, validation).
// Thread-safety: the workload is used by one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "tessera/base/status.h"
#include "tessera/sim/workload.h"

namespace tessera::sim {

// `duration_s` 0: the last arrival plus one second. Errors: kNotFound; kCorruptData naming the
// line (column count, a number, a negative time or a length below 1, times out of order).
Result<std::unique_ptr<Workload>> make_schedule_workload(const std::string& path,
                                                        double duration_s = 0.0);

}  // namespace tessera::sim
