#include "tessera/sim/replica_admission.h"

#include <algorithm>
#include <string>

#include "tessera/base/check.h"

namespace tessera::sim {

ReplicaRequest take_in(const ReplicaLimits& limits, uint64_t id, int32_t input_tokens,
                       int32_t output_tokens, int32_t cached_tokens, const char* who) {
  TS_CHECK_MSG(input_tokens >= 1 && output_tokens >= 1 && cached_tokens >= 0,
               std::string(who) +
                   " needs input_tokens >= 1, output_tokens >= 1, cached_tokens >= 0");
  ReplicaRequest in;
  in.id = id;
  in.input = input_tokens;
  in.output = output_tokens;
  const int32_t cached = std::min(cached_tokens, input_tokens - 1);
  in.prefill_left = input_tokens - cached;
  in.position = cached;
  in.claim = std::min<int64_t>(static_cast<int64_t>(input_tokens) + output_tokens,
                               limits.kv_capacity_tokens);
  return in;
}

engine::Admission replica_admission(const ReplicaLimits& limits, int64_t cap, int64_t n_running,
                                    int64_t kv_used) {
  engine::Admission a;
  a.cap = cap;
  a.n_running = n_running;
  a.kv_available = limits.kv_capacity_tokens;
  a.kv_claimed = kv_used;
  a.kv_reserve_per_running = 0;
  return a;
}

}  // namespace tessera::sim
