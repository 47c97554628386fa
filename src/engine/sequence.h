// Sequence: the engine's state for one request while it is queued or running: its tokens
// (prompt, then generated), how many of them have K/V in the cache, its KV block table with the
// chain hashes of its full blocks, its sampler and text stream, and its speculation state (the
// drafts proposed for the current step, the adaptive draft length, the drafter's own state).
// Thread-safety: owned by the engine's scheduler thread once admitted.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tessera/engine/request.h"
#include "tessera/engine/sampler.h"
#include "tessera/engine/text_stream.h"
#include "tessera/engine/token_constraint.h"

namespace tessera::engine {

// What a drafter keeps per sequence (engine/drafter.h); dropped when the sequence is preempted
// or finishes.
struct DraftState {
  virtual ~DraftState() = default;
};

struct Sequence {
  Sequence(RequestId id_, Request request_, EventSink sink_, int64_t submit_ns_)
      : id(id_),
        request(std::move(request_)),
        sink(std::move(sink_)),
        tokens(request.prompt),
        n_prompt(static_cast<int32_t>(request.prompt.size())),
        sampler(request.sampling),
        text(request.stop),
        submit_ns(submit_ns_) {
    if (request.structured) constraint = std::make_unique<TokenConstraint>(*request.structured);
  }

  RequestId id;
  Request request;
  EventSink sink;
  std::vector<int32_t> tokens;  // prompt then generated (verified tokens only)
  int32_t n_prompt;
  int64_t n_computed = 0;       // tokens whose K/V are in the cache (a prefix of `tokens`)
  std::vector<int32_t> blocks;  // KV block table (may run past n_computed by lookahead blocks)
  std::vector<uint64_t> block_hashes;  // chain hash of each full block of `tokens` published
  int32_t slot = -1;            // KV cache slot while running
  int32_t n_cached = 0;         // prompt tokens taken from the prefix cache (first admission)
  bool admitted_before = false;
  Sampler sampler;
  TextStream text;
  std::unique_ptr<TokenConstraint> constraint;  // structured output; null: free text
  int32_t n_generated() const { return static_cast<int32_t>(tokens.size()) - n_prompt; }
  // Tokens still to run through the model (the last sampled token included).
  int64_t n_pending() const { return static_cast<int64_t>(tokens.size()) - n_computed; }

  // Speculation (engine/drafter.h). spec_k: this sequence's current draft length (adaptive;
  // 0 = not speculating). draft / draft_q: this step's proposal (draft_q empty = point masses).
  int32_t spec_k = 0;
  std::vector<int32_t> draft;
  std::vector<TokenDist> draft_q;
  std::unique_ptr<DraftState> draft_state;

  int64_t submit_ns;
  int64_t first_scheduled_ns = -1;
  int64_t first_token_ns = -1;
  int64_t last_token_ns = -1;
};

}  // namespace tessera::engine
