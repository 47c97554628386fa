// ModelDrafter: drafts with a second, cheaper model that shares the target's vocabulary: a small
// model of the same family, or the target itself at a lower precision (an F16 target drafted by
// its Q4_0 copy). It keeps its own KV cache (one contiguous slot per engine slot) and, per
// sequence, how many positions of it are valid. It runs each prompt chunk in the same step as the
// target does; each decode step it catches up on the tokens verified since (one batched pass
// over all drafting sequences), then runs k - 1 single-row passes, so k drafts cost k forward
// passes of the draft model. Drafts are drawn with the request's own
// sampling settings (greedy requests: argmax after penalties), recording q for verification.
// After verification its cache is valid up to the last accepted token it had seen.
// Thread-safety: engine scheduler thread only.
#pragma once

#include <memory>

#include "tessera/engine/drafter.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/batch.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::engine {

// kInvalidArgument naming the first difference when two tokenizers do not have the same
// vocabulary (size, token strings, BOS/EOS), which speculation needs: drafts are token ids.
Status check_same_vocabulary(const model::Tokenizer& target, const model::Tokenizer& draft);

class ModelDrafter final : public Drafter {
 public:
  // A drafter over `draft` for an engine of `n_slots` slots of `ctx_size` positions.
  // Errors: kInvalidArgument when the models' vocabulary sizes differ, the KV cache's errors.
  static Result<std::unique_ptr<ModelDrafter>> create(std::shared_ptr<model::Model> draft,
                                                      int32_t target_n_vocab, int32_t n_slots,
                                                      int64_t ctx_size, kernels::DType kv_dtype);
  std::string_view name() const override { return "draft"; }
  Status propose(std::span<const DraftRequest> requests, ThreadPool* pool) override;
  Status prefill(std::span<const PrefillChunk> chunks, ThreadPool* pool) override;
  void verified(Sequence& seq) override;

 private:
  ModelDrafter(std::shared_ptr<model::Model> draft, model::KvCache kv);

  std::shared_ptr<model::Model> model_;
  model::KvCache kv_;
  model::Batch batch_;
  std::vector<float> logits_;
  std::vector<int32_t> history_;  // scratch: a sequence's penalty window plus its drafts
};

}  // namespace tessera::engine
