// Speculator: speculative decoding around the step runner. It owns the drafters (n-gram lookup,
// and the draft model when SpecOptions has one) and everything a step does with them:
// - which drafter a request speculates with (SpecMode; structured output never speculates);
// - each sequence's draft length: the full SpecOptions::max_draft at admission, then adapted
//   after every verification (adapt_draft_length), within the allowance the scheduler grants
//   per step (ScheduledSeq::n_draft_max: rows and lookahead blocks, scheduler.h);
// - before the forward pass, the draft model's prefill of this step's prompt chunks and the
//   drafts themselves (Sequence::draft / draft_q);
// - after the step runner verified them and the engine emitted the accepted tokens, the
//   hand-off back: the drafter learns what was kept, the drafts are cleared.
// The scheduler grants the allowance, the step runner verifies (engine/spec_verify.h) and the
// KvManager rolls lookahead blocks back; this unit touches neither the target model nor the KV
// pool.
//
//   StepPlan ──propose──> Sequence::draft ──StepRunner (verify)──> engine emits ──verified──>
//                                                                  spec_k, drafter state
//
// Thread-safety: engine scheduler thread only.
#pragma once

#include <cstdint>
#include <memory>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/drafter.h"
#include "tessera/engine/engine_options.h"
#include "tessera/engine/model_drafter.h"
#include "tessera/engine/ngram_drafter.h"
#include "tessera/engine/scheduler.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::engine {

class Speculator {
 public:
  // Errors: kInvalidArgument for a draft length outside [1, kMaxDraftTokens] (engine.h), a
  // negative row limit, n-gram sizes outside 1 <= min <= max <= 16, or kDraftModel without a
  // draft model.
  static Status validate(const SpecOptions& options);
  // The speculator of an engine over a model with `n_vocab` tokens (`target` its tokenizer) and
  // `n_slots` sequences of `ctx_size` positions; with a draft model, its drafter's KV cache is
  // `kv_dtype`. Preconditions: validate(options) passed. Errors: check_same_vocabulary's (when
  // options.draft_tokenizer is set), ModelDrafter::create's.
  static Result<Speculator> create(const SpecOptions& options, const model::Tokenizer& target,
                                   int32_t n_vocab, int32_t n_slots, int64_t ctx_size,
                                   kernels::DType kv_dtype);
  // Over the given draft model drafter (null: none). Precondition: validate(options) passed.
  explicit Speculator(const SpecOptions& options,
                      std::unique_ptr<ModelDrafter> draft_model = nullptr);

  // The drafter `r` speculates with, or null: none for SpecMode::kOff and structured output; the
  // engine's method for kDefault; that method, or n-gram lookup when it has none, for kOn.
  Drafter* drafter_for(const Request& r);

  // s was admitted for the first time: it starts at the full draft length if it speculates.
  void admitted(Sequence& s);
  // s was preempted (its K/V dropped): the drafter forgets it and its drafts are cleared.
  void preempted(Sequence& s);
  // s finished: the drafter forgets it.
  void finished(Sequence& s);

  // Before the step's forward pass: lets the draft model run this step's prompt chunks of the
  // sequences it drafts for while the running batch (`n_running` sequences) is small enough that
  // they would get drafts (SpecOptions::max_rows; a sequence that starts drafting later catches
  // up then), then fills the drafts of every sequence the plan allows some (n_draft_max > 0) and
  // clears the others'. A drafter that fails is logged and leaves its sequences without drafts
  // this step. `pool` may be null.
  void propose(const StepPlan& plan, int64_t n_running, ThreadPool* pool);

  // After s's verification (n_accepted of its n_drafted drafts kept, the tokens emitted, s not
  // finished, its lookahead rolled back): its drafter catches up, its draft length adapts and its
  // drafts are cleared.
  void verified(Sequence& s, int32_t n_drafted, int32_t n_accepted);

  const SpecOptions& options() const { return opt_; }

 private:
  void prefill(const StepPlan& plan, int64_t n_running, ThreadPool* pool);

  SpecOptions opt_;
  NgramDrafter ngram_;
  std::unique_ptr<ModelDrafter> draft_model_;  // null without SpecOptions::draft_model
};

}  // namespace tessera::engine
