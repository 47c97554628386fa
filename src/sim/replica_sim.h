// ReplicaSim: one engine replica under iteration-level (continuous) batching with chunked
// prefill, simulated event by event: O(1) amortized work per request, never one step per
// iteration. The rules (the engine scheduler's, simplified):
//   - Admission, at iteration boundaries only, strictly FCFS, by the rule the engine's scheduler
//     applies (engine/batch_policy.h) over the claims of replica_admission.h: the oldest waiting
//     request is admitted while fewer than max_running run and its KV claim (input + output
//     tokens) fits the free KV; it holds the claim until it finishes. A claim larger than the
//     whole pool is cut to the pool, so such a request runs alone instead of blocking forever.
//     Unlike the engine (and IterationReplica), max_batch_tokens does not cap the running
//     requests, so decode rows may pass it.
//   - Each iteration runs every decode row (one token each) and then one prefill chunk of the
//     oldest admitted request still prefilling: min(its remaining prompt, max_batch_tokens -
//     decode rows) tokens, none when that is <= 0 (the engine, and IterationReplica, give the
//     rows left to the next prompts too). Prompt tokens already cached skip prefill (at least
//     one token is always computed, for the logits).
//   - The first token comes at the end of the iteration that completes the prefill; then one
//     token per iteration; a request finishes with its output_tokens-th token (the first counts)
//     and frees its KV at the end of that iteration.
//   - A request added at time t joins at the first iteration boundary at or after t; an idle
//     replica starts an iteration at once.
//   - Iteration time = cost.step_s(StepWork), rounded to whole nanoseconds (at least 1).
// Context (StepWork): a decode row of a request with g tokens generated attends and reads
// input + g positions; a prefill chunk of c tokens starting at position s attends
// c s + c (c + 1) / 2 positions and reads s + c.
// How it jumps: between composition changes (an admission, a prefill completing, a request
// finishing) consecutive iterations are identical but for their context, so a whole run of k of
// them is one segment with one step time, taken at the context of the segment's middle iteration
// (exact when step_s is affine in context_tokens; within the curvature of max() otherwise). A
// prefill whose last chunk is partial ends its segment with that one shorter iteration, so every
// segment ends with a first token or a finish, and next_event_ns() is always a real event.
// Arrivals that can be admitted at once cut the current segment at the next boundary.
// Deterministic: the same calls give the same events, bit for bit.
// Thread-safety: not thread-safe; one owner thread. The CostModel must outlive the ReplicaSim.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <queue>
#include <vector>

#include "tessera/sim/cost_model.h"
#include "tessera/sim/replica_admission.h"

namespace tessera::sim {

struct ReplicaEvent {
  enum Kind { kFirstToken, kFinish };
  uint64_t id = 0;
  Kind kind = kFirstToken;
  int64_t t_ns = 0;
};

class ReplicaSim {
 public:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  // Preconditions: limits as documented above. `cost` is borrowed.
  ReplicaSim(const CostModel& cost, const ReplicaLimits& limits);

  // Queues request `id` arriving at `now_ns`. Preconditions: input_tokens >= 1, output_tokens
  // >= 1, cached_tokens >= 0 (clamped to input_tokens - 1), now_ns >= every earlier add() and
  // advance() time. Events that fall at or before now_ns are kept for the next advance().
  void add(uint64_t id, int64_t now_ns, int32_t input_tokens, int32_t output_tokens,
           int32_t cached_tokens = 0);

  // The time of the next first token or finish (one already reached but not yet handed out
  // comes first); kNever when idle.
  int64_t next_event_ns() const {
    if (!ready_.empty()) return ready_.front().t_ns;
    return active_ ? seg_end_ns_ : kNever;
  }

  // The cost model's answer changed at `now_ns` (the device it shares got busier or quieter):
  // the iteration running at now_ns ends as planned, the rest of the segment is re-planned at the
  // new cost from that boundary. Nothing changes when the current iteration is the segment's
  // last. Precondition: now_ns >= the previous add() and advance() times.
  void reprice(int64_t now_ns);

  // Runs the replica up to `t_ns`, appending every first token and finish at or before t_ns in
  // time order (at one instant: the first token of the request whose prefill completed, then
  // finishes in the order their decoding began). Precondition: t_ns >= the previous add() and
  // advance() times; advance(kNever) drains the replica.
  void advance(int64_t t_ns, std::vector<ReplicaEvent>& out);

  // State at the last iteration boundary at or before the latest advance()/add() time.
  int32_t running() const { return n_running_; }
  int32_t waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int64_t kv_tokens_used() const { return kv_used_; }
  bool idle() const { return !active_ && waiting_.empty(); }
  // Seconds with at least one request running, up to the latest advance()/add() time.
  double busy_s() const;
  // Iterations run so far, in segments completed or cut (for reports and tests).
  int64_t iterations() const { return iterations_; }

 private:
  struct Request : ReplicaRequest {
    int64_t finish_at = 0;     // value of decode_counter_ at which the last token comes
    uint64_t seq = 0;          // admission order, for deterministic ties
  };
  // (finish_at, seq, slot): a min-heap of decode rows by when they finish.
  struct DecodeKey {
    int64_t finish_at;
    uint64_t seq;
    uint32_t slot;
    bool operator>(const DecodeKey& o) const {
      return finish_at != o.finish_at ? finish_at > o.finish_at : seq > o.seq;
    }
  };

  uint32_t new_slot();
  bool can_admit_head() const;
  void admit();
  // Plans the segment that starts at clock_ns_ (admitting first); inactive when nothing runs.
  void plan();
  // Completes every segment ending at or before t_ns, collecting their events in ready_.
  void run_until(int64_t t_ns);
  void finish_segment();
  // Applies the first j (< the segment's) identical iterations and re-plans at their end.
  void cut_segment(int64_t j);
  int64_t step_ns(int32_t prefill, int32_t decode_rows, int64_t context, int64_t kv_read) const;

  const CostModel& cost_;
  const ReplicaLimits limits_;

  std::vector<Request> slots_;
  std::vector<uint32_t> free_slots_;
  std::deque<uint32_t> waiting_;     // arrived, not admitted (FCFS)
  std::deque<uint32_t> prefilling_;  // admitted, prompt not done (FCFS; the front runs)
  std::priority_queue<DecodeKey, std::vector<DecodeKey>, std::greater<DecodeKey>> decoding_;
  int32_t n_running_ = 0;
  int64_t kv_used_ = 0;
  uint64_t next_seq_ = 0;
  // Counts iterations; a decode row with g tokens generated has g = output - (finish_at - it).
  int64_t decode_counter_ = 0;
  // Sum over decode rows of (input + output - finish_at): their context is this + rows x counter.
  int64_t decode_ctx_base_ = 0;

  int64_t clock_ns_ = 0;  // start of the current segment (the last boundary)
  int64_t now_ns_ = 0;    // latest add()/advance() time
  int64_t busy_ns_ = 0;   // completed segments and cut parts
  int64_t iterations_ = 0;

  // The current segment: n_full_ identical iterations of step_ns_ (prefill chunk_ of the front
  // prefilling request, if chunk_ > 0), then, if tail_chunk_ > 0, one iteration of tail_step_ns_
  // whose chunk completes that prefill. completes_prefill_: the segment's last iteration
  // completes the front request's prompt.
  bool active_ = false;
  int64_t n_full_ = 0;
  int64_t step_ns_ = 0;
  int32_t chunk_ = 0;
  int32_t tail_chunk_ = 0;
  int64_t tail_step_ns_ = 0;
  bool completes_prefill_ = false;
  int64_t seg_end_ns_ = 0;

  std::vector<ReplicaEvent> ready_;  // events already reached, not yet handed out
};

}  // namespace tessera::sim
