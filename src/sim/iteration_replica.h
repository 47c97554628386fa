// IterationReplica: one engine replica stepped one iteration at a time by its caller, the batch
// composed by engine::Scheduler's rule (engine/batch_policy.h): every decoding request gets one
// row, then every admitted request still prefilling gets min(its remaining prompt, the rows left
// of max_batch_tokens), oldest first (a prompt with one token left counts as a decode row, as in
// the engine). For the shared-device simulation with the live
// arbitration (device_arbiter.h), where a replica runs only when the device is granted to it and
// its batch is fixed when it asks (as the engine plans before DeviceScheduler::acquire).
// ReplicaSim (replica_sim.h) is the fast path for replicas that own their device: it jumps over
// runs of identical iterations and runs one prefill chunk per iteration.
//
// Admission (FCFS, at plan time; engine/batch_policy.h over replica_admission.h's claims): while
// fewer than min(max_running, max_batch_tokens) run, as in the engine, and the head's KV claim
// (input + output tokens, cut to the pool) fits. First token at the end of the iteration that
// completes the prompt (cached prompt tokens are skipped, at least one is computed); then one
// token per iteration; a request finishes with its output_tokens-th token and frees its claim
// then.
// Step time = cost.step_s(StepWork) of the planned batch, rounded to whole ns (at least 1);
// context as ReplicaSim's (a decode row with g tokens generated attends input + g positions).
// Deadlines (engine::Engine's batch_deadline_ns): a request with no token yet is due ttft_ns
// after it was added, a decoding one tpot_ns after its last token; a batch's is the earliest.
// Thread-safety: not thread-safe; one owner. The CostModel must outlive it.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "tessera/engine/batch_policy.h"
#include "tessera/sim/cost_model.h"
#include "tessera/sim/replica_admission.h"
#include "tessera/sim/replica_sim.h"

namespace tessera::sim {

class IterationReplica {
 public:
  // Preconditions: limits as ReplicaSim's; ttft_ns, tpot_ns >= 0.
  IterationReplica(const CostModel& cost, const ReplicaLimits& limits, int64_t ttft_ns,
                   int64_t tpot_ns);

  // Queues request `id` arriving at now_ns (it joins the next plan()). Preconditions as
  // ReplicaSim::add.
  void add(uint64_t id, int64_t now_ns, int32_t input_tokens, int32_t output_tokens,
           int32_t cached_tokens = 0);

  // True when a plan() would run something (requests running or admissible).
  bool has_work() const;

  struct Plan {
    int64_t duration_ns = 0;
    int64_t deadline_ns = -1;  // the batch's earliest deadline; -1: none
    int32_t prefill_tokens = 0, decode_rows = 0;
  };
  // Admits, then fixes the next iteration's batch. Precondition: has_work(), no plan pending.
  Plan plan();
  // Runs the planned iteration, ending at end_ns after running for ran_ns (its busy time; -1:
  // the planned duration): appends its first tokens (in batch order) and then its finishes to
  // `out`. Precondition: a plan is pending.
  void finish(int64_t end_ns, std::vector<ReplicaEvent>& out, int64_t ran_ns = -1);
  bool planned() const { return planned_; }
  // The running requests in admission order with their rows in the pending plan (0: left out
  // of it), for tests that hold the batch against engine::Scheduler's.
  struct BatchEntry {
    uint64_t id = 0;
    int32_t rows = 0;
  };
  std::vector<BatchEntry> batch() const;

  int32_t running() const { return static_cast<int32_t>(running_.size()); }
  int32_t waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int64_t kv_tokens_used() const { return kv_used_; }
  bool idle() const { return running_.empty() && waiting_.empty(); }
  double busy_s() const { return static_cast<double>(busy_ns_) * 1e-9; }
  int64_t iterations() const { return iterations_; }

 private:
  engine::Admission admission() const;

  struct Request : ReplicaRequest {
    int32_t generated = 0;
    int64_t added_ns = 0;
    int64_t last_token_ns = -1;
    int32_t rows = 0;          // in the pending plan
  };

  const CostModel& cost_;
  const ReplicaLimits limits_;
  const int64_t ttft_ns_, tpot_ns_;
  std::deque<Request> waiting_;
  std::vector<Request> running_;  // admission order
  int64_t kv_used_ = 0;
  bool planned_ = false;
  int64_t plan_ns_ = 0;
  int64_t busy_ns_ = 0;
  int64_t iterations_ = 0;
};

}  // namespace tessera::sim
