#include "tessera/engine/model_drafter.h"

#include <fmt/format.h>

#include <algorithm>

#include "tessera/base/check.h"

namespace tessera::engine {

namespace {

struct ModelDraftState final : DraftState {
  explicit ModelDraftState(const SamplingParams& p) : sampler(with_seed(p)) {}
  static SamplingParams with_seed(SamplingParams p) {
    p.seed ^= 0xD4AF7D4AF7ull;  // its own stream: the target's draws stay the target's
    return p;
  }
  int64_t n_computed = 0;  // positions of the draft cache holding this sequence's tokens
  Sampler sampler;
};

ModelDraftState& state_of(Sequence& s) {
  auto* st = dynamic_cast<ModelDraftState*>(s.draft_state.get());
  if (st == nullptr) {
    s.draft_state = std::make_unique<ModelDraftState>(s.request.sampling);
    st = static_cast<ModelDraftState*>(s.draft_state.get());
  }
  return *st;
}

}  // namespace

Status check_same_vocabulary(const model::Tokenizer& target, const model::Tokenizer& draft) {
  if (target.n_vocab() != draft.n_vocab()) {
    return invalid_argument(fmt::format(
        "the draft model's vocabulary has {} tokens, the target's {}: speculation needs the same "
        "tokenizer", draft.n_vocab(), target.n_vocab()));
  }
  if (target.bos_id() != draft.bos_id() || target.eos_id() != draft.eos_id()) {
    return invalid_argument("the draft model's BOS/EOS tokens differ from the target's");
  }
  for (int32_t id = 0; id < target.n_vocab(); ++id) {
    if (target.token_text(id) != draft.token_text(id)) {
      return invalid_argument(fmt::format(
          "the draft model's token {} is '{}', the target's '{}': speculation needs the same "
          "tokenizer", id, draft.token_text(id), target.token_text(id)));
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<ModelDrafter>> ModelDrafter::create(std::shared_ptr<model::Model> draft,
                                                           int32_t target_n_vocab,
                                                           int32_t n_slots, int64_t ctx_size,
                                                           kernels::DType kv_dtype) {
  if (!draft) return invalid_argument("no draft model");
  if (draft->config().n_vocab != target_n_vocab) {
    return invalid_argument(fmt::format(
        "the draft model has {} logits per token, the target {}: speculation needs the same "
        "vocabulary", draft->config().n_vocab, target_n_vocab));
  }
  TS_ASSIGN_OR_RETURN(model::KvCache kv,
                      model::KvCache::create(draft->config(), n_slots, ctx_size, kv_dtype));
  return std::unique_ptr<ModelDrafter>(new ModelDrafter(std::move(draft), std::move(kv)));
}

ModelDrafter::ModelDrafter(std::shared_ptr<model::Model> draft, model::KvCache kv)
    : model_(std::move(draft)), kv_(std::move(kv)) {}

Status ModelDrafter::propose(std::span<const DraftRequest> requests, ThreadPool* pool) {
  const int64_t n_vocab = model_->config().n_vocab;
  // Round 0 catches each sequence up to its last token; round j > 0 feeds draft j.
  std::vector<size_t> live;  // indexes of requests still drafting, in batch row order
  for (size_t i = 0; i < requests.size(); ++i) {
    Sequence& s = *requests[i].seq;
    s.draft.clear();
    s.draft_q.clear();
    TS_CHECK(s.slot >= 0 && s.slot < kv_.n_slots());
    live.push_back(i);
  }
  for (int32_t round = 0; !live.empty(); ++round) {
    batch_.clear();
    for (size_t i : live) {
      Sequence& s = *requests[i].seq;
      ModelDraftState& st = state_of(s);
      const auto n_tokens = static_cast<int64_t>(s.tokens.size());
      if (round == 0) {
        st.n_computed = std::min(st.n_computed, n_tokens - 1);
        for (int64_t p = st.n_computed; p < n_tokens; ++p) {
          batch_.add(s.tokens[static_cast<size_t>(p)], static_cast<int32_t>(p), s.slot,
                     p + 1 == n_tokens);
        }
      } else {
        batch_.add(s.draft.back(), static_cast<int32_t>(n_tokens + round - 1), s.slot, true);
      }
    }
    logits_.resize(live.size() * static_cast<size_t>(n_vocab));
    TS_RETURN_IF_ERROR(model_->forward(batch_, kv_, logits_, pool));
    std::vector<size_t> next;
    for (size_t r = 0; r < live.size(); ++r) {
      const DraftRequest& req = requests[live[r]];
      Sequence& s = *req.seq;
      ModelDraftState& st = state_of(s);
      st.n_computed = static_cast<int64_t>(s.tokens.size()) + round;
      // The penalty window of tokens, then the drafts so far.
      const size_t window = std::min(s.tokens.size(),
                                     static_cast<size_t>(s.request.sampling.penalty_last_n));
      history_.assign(s.tokens.end() - static_cast<std::ptrdiff_t>(window), s.tokens.end());
      history_.insert(history_.end(), s.draft.begin(), s.draft.end());
      std::span<float> row(logits_.data() + r * static_cast<size_t>(n_vocab),
                           static_cast<size_t>(n_vocab));
      int32_t t = 0;
      if (st.sampler.greedy()) {
        t = st.sampler.sample(row, history_);
      } else {
        TokenDist& q = s.draft_q.emplace_back();
        st.sampler.distribution(row, history_, q);
        t = st.sampler.draw(q);
      }
      s.draft.push_back(t);
      if (static_cast<int32_t>(s.draft.size()) < req.max_tokens) next.push_back(live[r]);
    }
    live.swap(next);
  }
  return Status::ok();
}

Status ModelDrafter::prefill(std::span<const PrefillChunk> chunks, ThreadPool* pool) {
  batch_.clear();
  std::vector<ModelDraftState*> states;
  for (const PrefillChunk& c : chunks) {
    Sequence& s = *c.seq;
    ModelDraftState& st = state_of(s);
    // Only a chunk that continues what the cache holds (a prefix-cache hit skipped the rest:
    // the first draft step catches up on it).
    if (st.n_computed != c.from || c.to <= c.from) continue;
    for (int64_t p = c.from; p < c.to; ++p) {
      batch_.add(s.tokens[static_cast<size_t>(p)], static_cast<int32_t>(p), s.slot, false);
    }
    states.push_back(&st);
    st.n_computed = c.to;
  }
  if (batch_.size() == 0) return Status::ok();
  const Status status = model_->forward(batch_, kv_, {}, pool);
  if (!status.is_ok()) {
    for (ModelDraftState* st : states) st->n_computed = 0;
  }
  return status;
}

void ModelDrafter::verified(Sequence& s) {
  if (auto* st = dynamic_cast<ModelDraftState*>(s.draft_state.get())) {
    st->n_computed = std::min(st->n_computed, s.n_computed);
  }
}

}  // namespace tessera::engine
