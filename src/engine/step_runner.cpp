#include "tessera/engine/step_runner.h"

#include <algorithm>

#include "tessera/base/check.h"

namespace tessera::engine {

void StepRunner::build(const std::vector<ScheduledSeq>& seqs) {
  seqs_ = &seqs;
  batch_.clear();
  first_logits_.assign(seqs.size(), -1);
  n_draft_rows_ = 0;
  n_prompt_rows_ = 0;
  int64_t n_logits = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const ScheduledSeq& e = seqs[i];
    Sequence& s = *e.seq;
    const bool samples = e.samples;
    if (s.n_computed < s.n_prompt) n_prompt_rows_ += e.n_rows;
    if (!samples || static_cast<int32_t>(s.draft.size()) > e.n_draft_max) {
      s.draft.resize(samples ? static_cast<size_t>(e.n_draft_max) : 0);
      if (s.draft_q.size() > s.draft.size()) s.draft_q.resize(s.draft.size());
    }
    for (int64_t r = 0; r < e.n_rows; ++r) {
      const int64_t pos = s.n_computed + r;
      batch_.add(s.tokens[static_cast<size_t>(pos)], static_cast<int32_t>(pos), s.slot,
                 samples && r + 1 == e.n_rows, s.request.adapter_id);
    }
    const auto base = static_cast<int32_t>(s.tokens.size());
    for (size_t d = 0; d < s.draft.size(); ++d) {
      batch_.add(s.draft[d], base + static_cast<int32_t>(d), s.slot, true, s.request.adapter_id);
    }
    n_draft_rows_ += static_cast<int64_t>(s.draft.size());
    if (samples) {
      first_logits_[i] = n_logits;
      n_logits += 1 + static_cast<int64_t>(s.draft.size());
    }
  }
}

Status StepRunner::forward(ThreadPool* pool) {
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  const size_t need = static_cast<size_t>(batch_.n_logits()) * n_vocab;
  if (logits_.size() < need) logits_.resize(need);
  return model_.forward(batch_, kv_, logits_, pool);
}

std::span<float> StepRunner::row(int64_t logits_row) {
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  return {logits_.data() + static_cast<size_t>(logits_row) * n_vocab, n_vocab};
}

VerifyResult StepRunner::decide(size_t i, bool keep_raw, int64_t budget) {
  TS_CHECK(seqs_ != nullptr && i < seqs_->size() && first_logits_[i] >= 0);
  Sequence& s = *(*seqs_)[i].seq;
  const int64_t first = first_logits_[i];
  const auto n_rows = static_cast<int64_t>(s.draft.size()) + 1;
  if (keep_raw) {
    const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
    raw_.resize(static_cast<size_t>(n_rows) * n_vocab);
    std::copy_n(row(first).data(), raw_.size(), raw_.data());
  }
  if (s.constraint) {
    // Structured output (never drafted): only tokens that continue the value may be sampled.
    TS_CHECK(s.draft.empty());
    return {0, decide_constrained(s, first, budget)};
  }
  if (s.draft.empty()) return {0, s.sampler.sample(row(first), s.tokens)};
  history_.assign(s.tokens.begin(), s.tokens.end());
  history_.insert(history_.end(), s.draft.begin(), s.draft.end());
  return verify_drafts(s.sampler, history_, s.draft, s.draft_q,
                       [&](int32_t j) { return row(first + j); });
}

// The constraint's time is measured around its own calls only, so the sampler's (which runs on
// every sequence, constrained or not) stays out of the figure.
int32_t StepRunner::decide_constrained(Sequence& s, int64_t first, int64_t budget) {
  const int64_t t0 = clock_->now_ns();
  s.constraint->mask(row(first), budget);
  const int64_t t1 = clock_->now_ns();
  const int32_t sampled = s.sampler.sample(row(first), s.tokens);
  const int64_t t2 = clock_->now_ns();
  const int32_t t = s.constraint->keep_completable(sampled, budget);
  s.constraint->accept(t);
  constraint_time_.ns += (t1 - t0) + (clock_->now_ns() - t2);
  ++constraint_time_.n_tokens;
  return t;
}

std::span<const float> StepRunner::raw_row(int32_t j) const {
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  TS_CHECK(static_cast<size_t>(j + 1) * n_vocab <= raw_.size());
  return {raw_.data() + static_cast<size_t>(j) * n_vocab, n_vocab};
}

}  // namespace tessera::engine
