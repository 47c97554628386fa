// StepRunner: the one part of the engine that runs the model. Each step it builds the batch (each
// scheduled sequence's pending rows, then its draft tokens, logits for every row a token is
// chosen from), runs the forward pass, and for each sequence that samples this step decides its
// new tokens: a plain sample, or verification of its drafts (engine/spec_verify.h), which gives
// the accepted drafts plus one token of the target's own. Between steps its ModelOps
// (engine/model_ops.h) runs the model's other work: LoRA adapter changes and embeddings.
//   StepPlan ──build──> model::Batch ──forward──> logits rows ──decide──> VerifyResult per sequence
// Thread-safety: engine scheduler thread only (the forward pass uses the pool it is given);
// ops() is thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "tessera/base/clock.h"
#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/model_ops.h"
#include "tessera/engine/scheduler.h"
#include "tessera/engine/spec_verify.h"
#include "tessera/model/batch.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/model.h"

namespace tessera::engine {

// Time spent in structured output's token constraint (TokenConstraint: mask, keep_completable,
// accept; not the sampling between them) and the tokens it decided, since construction.
struct ConstraintTime {
  int64_t ns = 0;
  int64_t n_tokens = 0;
};

class StepRunner {
 public:
  // Runs `model` over `kv`; `ops` configures its ModelOps; `clock` (kept) times the constraint.
  StepRunner(model::Model& model, model::KvCache& kv, ModelOps::Options ops, const Clock* clock)
      : model_(model), kv_(kv), clock_(clock), ops_(model, std::move(ops)) {}

  // Lays out the batch for `seqs` (kept by reference until the step ends). A sequence that
  // samples contributes its drafts (seq->draft, at most n_draft_max of them) as extra rows.
  void build(const std::vector<ScheduledSeq>& seqs);
  // Runs the batch. Errors: the model's.
  Status forward(ThreadPool* pool);
  // For seqs[i] (which samples): samples its next token, or verifies its drafts. The logits
  // rows are modified (penalties); when `keep_raw`, a copy of each row as the model produced it
  // is kept first for raw_row(). `budget`: the tokens the sequence may still emit, this one
  // included (negative: unbounded); a structured output keeps its value completable within it
  // (TokenConstraint::mask / keep_completable).
  VerifyResult decide(size_t i, bool keep_raw, int64_t budget = -1);
  // Row j of the logits decide(i, true) used, unmodified. Valid until the next decide().
  std::span<const float> raw_row(int32_t j) const;

  const model::Batch& batch() const { return batch_; }
  int64_t n_draft_rows() const { return n_draft_rows_; }
  // Rows of the built batch that run prompt tokens (the rest decode, drafts included).
  int64_t n_prompt_rows() const { return n_prompt_rows_; }

  // Adapter changes and embeddings (thread-safe; run between steps by the scheduler thread).
  ModelOps& ops() { return ops_; }
  // Totals over every decide() of a constrained sequence.
  const ConstraintTime& constraint_time() const { return constraint_time_; }

 private:
  std::span<float> row(int64_t logits_row);
  int32_t decide_constrained(Sequence& s, int64_t first, int64_t budget);

  model::Model& model_;
  model::KvCache& kv_;
  const Clock* clock_;
  ConstraintTime constraint_time_;
  const std::vector<ScheduledSeq>* seqs_ = nullptr;
  model::Batch batch_;
  std::vector<int64_t> first_logits_;  // per scheduled sequence: its first logits row, or -1
  std::vector<float> logits_;
  std::vector<float> raw_;
  std::vector<int32_t> history_;  // scratch: tokens then drafts
  int64_t n_draft_rows_ = 0;
  int64_t n_prompt_rows_ = 0;
  ModelOps ops_;
};

}  // namespace tessera::engine
