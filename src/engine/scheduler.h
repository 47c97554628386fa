// Scheduler: decides what one engine step runs. It owns the waiting queue and the running set
// and turns them into a StepPlan:
// - admission of waiting sequences, by priority and first come first served within it, while the
//   KV pool holds the next prompt with a block of growth left per running sequence and while
//   every running sequence still gets a row of the token budget (max_running only caps it;
//   cached prefix blocks are taken first; the head of the queue is never skipped, so none
//   starves);
// - one decode row per decoding sequence, then prefill chunks in admission order under the token
//   budget;
//   (admission and composition by the batching rule of batch_policy.h, which the simulator's
//   replicas share);
// - preemption of the lowest-priority, most recently admitted sequence when the pool cannot hold
//   the step (it goes back ahead of the waiting sequences of its priority);
// - a draft allowance per decoding sequence (speculation), granted only from the token budget
//   and KV blocks left over, and only while the step's decode rows stay few enough to be
//   memory-bound (SpecOptions::max_rows; the rows left under that cap are shared evenly among
//   the decoding sequences).
// It neither runs the model nor samples; with a KvManager over a small config it is tested
// without a model.
//
//   waiting ──admit──> running ──plan──> StepPlan {seq, rows, drafts allowed} ──> engine/runner
//      ▲                  │
//      └────preempt───────┘  (blocks dropped; the sequence recomputes, mostly from the prefix cache)
//
// Thread-safety: not synchronized; owned by the engine's scheduler thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "tessera/engine/kv_manager.h"
#include "tessera/engine/sequence.h"

namespace tessera::engine {

struct SchedulerOptions {
  int32_t max_running = 256;       // sequences running at once, at most
  int32_t max_batch_tokens = 512;  // rows per step, draft rows included
  int64_t ctx_size = 0;            // positions per sequence
  int32_t spec_max_rows = 4;       // decode rows plus draft rows per step at most
};

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int64_t n_rows = 0;       // pending tokens to run: a prompt chunk, or the last sampled token
  int32_t n_draft_max = 0;  // draft tokens it may add after them (lookahead blocks are held)
  bool samples = false;     // the rows reach the end of its tokens: the step picks a token
};

struct StepPlan {
  std::vector<ScheduledSeq> seqs;    // decode rows first, then prefill chunks
  std::vector<Sequence*> admitted;   // admitted this step for the first time
  std::vector<Sequence*> preempted;  // moved back to the front of the waiting queue
};

class Scheduler {
 public:
  Scheduler(const SchedulerOptions& options, KvManager& kv) : opt_(options), kv_(kv) {}

  // Queues a new sequence behind the others of its priority (ahead of lower ones).
  void enqueue(std::unique_ptr<Sequence> s);
  // Takes sequence `id` out of the waiting queue or the running set (its blocks untouched);
  // null when unknown. *was_waiting tells which.
  std::unique_ptr<Sequence> remove(RequestId id, bool* was_waiting);
  // Admits, plans and reserves KV blocks (rows and draft lookahead) for one step.
  StepPlan schedule();
  // Removes finished sequences from the running set (their blocks already released).
  void retire(const std::vector<Sequence*>& done);

  const std::deque<std::unique_ptr<Sequence>>& waiting() const { return waiting_; }
  const std::vector<std::unique_ptr<Sequence>>& running() const { return running_; }
  // Empties both queues (running first, most recent first; then waiting, oldest first).
  std::vector<std::unique_ptr<Sequence>> take_all();

 private:
  void admit(StepPlan& plan);
  void preempt_last(StepPlan& plan);
  void grant_drafts(StepPlan& plan, int64_t budget);

  SchedulerOptions opt_;
  KvManager& kv_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order
};

}  // namespace tessera::engine
