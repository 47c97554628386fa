// Drafter: proposes draft tokens for speculative decoding. Each step the scheduler allows a
// decoding sequence up to n draft tokens; the drafter writes at most that many into
// Sequence::draft (and, when it has them, the distributions it drew them from into
// Sequence::draft_q, for rejection sampling); the step runner verifies them against the target
// model in the same forward pass as everyone else's rows (engine/spec_verify.h).
//   NgramDrafter      prompt lookup: continues the longest recent n-gram that occurred before
//   ModelDrafter      a smaller model with the same vocabulary (or the target at lower precision)
// Thread-safety: called only from the engine's scheduler thread.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/sequence.h"

namespace tessera::engine {

struct DraftRequest {
  Sequence* seq = nullptr;
  int32_t max_tokens = 0;  // >= 1
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::string_view name() const = 0;
  // Fills each request's seq->draft with at most max_tokens tokens (possibly none) and
  // seq->draft_q with one distribution per draft token, or leaves it empty (point masses).
  // `pool` may be null. Errors: a failed forward pass of a draft model (the engine then runs
  // the step without drafts).
  virtual Status propose(std::span<const DraftRequest> requests, ThreadPool* pool) = 0;
  // The target runs prompt rows [from, to) of each sequence this step (prefill chunks): a
  // drafter with a cache of its own may run them too, so that drafting starts warm instead of
  // paying the whole prompt on the first decode step. `pool` may be null. Errors: its model's.
  struct PrefillChunk {
    Sequence* seq = nullptr;
    int64_t from = 0;
    int64_t to = 0;
  };
  virtual Status prefill(std::span<const PrefillChunk> /*chunks*/, ThreadPool* /*pool*/) {
    return Status::ok();
  }
  // After verification: seq.tokens holds the verified tokens and seq.n_computed those whose
  // K/V are cached; state about rejected drafts must go.
  virtual void verified(Sequence& /*seq*/) {}
  // The sequence was preempted or finished: drop its state.
  virtual void forget(Sequence& seq) { seq.draft_state.reset(); }
};

// Updates seq.spec_k after a verification with `n_drafted` drafts of which `n_accepted` were
// accepted: one longer after a full acceptance (up to `max_draft`), else the accepted count
// plus one, so a sequence whose drafts keep failing drafts one token a step.
void adapt_draft_length(Sequence& seq, int32_t n_drafted, int32_t n_accepted, int32_t max_draft);

}  // namespace tessera::engine
