// BatchPolicy: the batching rule of one engine step, over plain numbers, so that
// engine::Scheduler (over its sequences and KV blocks) and the simulator's replicas (src/sim, over
// simulated requests and KV tokens) compose batches by one rule:
// - admission: the head of the waiting queue joins (first come first served, never skipped, so
//   none starves) while fewer than the cap run and its KV need fits the pool past what the
//   running sequences claim and a growth reserve per running sequence; with none running it
//   always joins (it runs alone rather than block the queue). The engine's cap is running_cap():
//   every running sequence gets a row of the token budget each step.
// - composition: one row per sequence with one token pending (decoding), then prefill chunks in
//   admission order, each min(its pending tokens, the rows left of the token budget).
// Units are the caller's (the engine counts KV in blocks and reserves one per running sequence;
// the simulator claims a request's whole input + output in tokens and reserves none).
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tessera::engine {

struct BatchLimits {
  int32_t max_running = 256;       // sequences running at once, at most
  int32_t max_batch_tokens = 512;  // rows per step
};

// Sequences running at once, at most: max_running, and no more than the token budget has rows.
int64_t running_cap(const BatchLimits& limits);

// Admission of the waiting queue's head, one at a time: the callers loop while has_room() and
// fits(the head's need), calling take() for each admitted.
struct Admission {
  int64_t cap = 0;                  // running sequences at most
  int64_t n_running = 0;            // running now (admitted ones counted)
  int64_t kv_available = 0;         // the KV pool the running sequences and the head share
  int64_t kv_claimed = 0;           // what the running sequences hold or have claimed
  int64_t kv_reserve_per_running = 0;  // kept back per running sequence for its growth

  bool has_room() const { return n_running < cap; }
  // Whether a head needing `kv_need` more joins (always when none runs).
  bool fits(int64_t kv_need) const {
    return n_running == 0 ||
           kv_claimed + kv_need + n_running * kv_reserve_per_running <= kv_available;
  }
  void take(int64_t kv_need) {
    ++n_running;
    kv_claimed += kv_need;
  }
};

struct BatchRow {
  size_t index = 0;  // into the running sequences, in admission order
  int64_t rows = 0;  // tokens it runs this step (1 for a decode row)
  bool operator==(const BatchRow&) const = default;
};

// One step's rows for the running sequences, `pending[i]` tokens still to run for the i-th in
// admission order: decode rows first (pending == 1), then prefill chunks (pending > 1), while
// the budget lasts; a sequence with nothing pending gets none. *budget_left: the rows unused.
std::vector<BatchRow> compose_rows(std::span<const int64_t> pending, int64_t max_batch_tokens,
                                   int64_t* budget_left = nullptr);

}  // namespace tessera::engine
