// ReplicaAdmission: how the simulator's replicas (ReplicaSim, IterationReplica) take a request in
// and admit it. A request's KV claim is its whole input + output tokens, held from admission to
// its finish, so a simulated replica never preempts (the engine instead claims blocks as tokens
// come and keeps one block of growth per running sequence); a claim larger than the whole pool
// is cut to the pool, so such a request runs alone instead of blocking forever. Prompt tokens
// already cached skip prefill, but at least one is computed (for the logits). Admission of the
// head of the FCFS queue is engine::BatchPolicy's rule (engine/batch_policy.h) over these
// claims, with no growth reserve.
// Pure; thread-safe.
#pragma once

#include <cstdint>

#include "tessera/engine/batch_policy.h"

namespace tessera::sim {

struct ReplicaLimits {
  int32_t max_running = 256;        // admitted requests at once, >= 1
  int32_t max_batch_tokens = 2048;  // rows per iteration: decode rows first, then prefill chunks
                                    // filling the rest (chunked prefill), >= 1
  int64_t kv_capacity_tokens = 0;   // the KV pool, >= 1 (usually cost.kv_capacity_tokens())
};

// A request as a replica takes it in (each replica adds its own state to it).
struct ReplicaRequest {
  uint64_t id = 0;
  int32_t input = 0;
  int32_t output = 0;
  int32_t prefill_left = 0;  // prompt tokens still to compute
  int64_t position = 0;      // prompt tokens in the KV cache (cached, then prefilled)
  int64_t claim = 0;         // KV tokens it holds while admitted
};

// Preconditions (checked; `who` names the caller in the message): input_tokens >= 1,
// output_tokens >= 1, cached_tokens >= 0 (clamped to input_tokens - 1).
ReplicaRequest take_in(const ReplicaLimits& limits, uint64_t id, int32_t input_tokens,
                       int32_t output_tokens, int32_t cached_tokens, const char* who);

// The admission state of a replica with `n_running` requests holding `kv_used` tokens of claims,
// at most `cap` running (engine::running_cap for the engine's cap).
engine::Admission replica_admission(const ReplicaLimits& limits, int64_t cap, int64_t n_running,
                                    int64_t kv_used);

}  // namespace tessera::sim
