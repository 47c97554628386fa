#include "tessera/engine/speculation.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "tessera/base/log.h"
#include "tessera/engine/engine.h"

namespace tessera::engine {

std::string_view spec_method_name(SpecMethod m) {
  switch (m) {
    case SpecMethod::kNone: return "none";
    case SpecMethod::kNgram: return "ngram";
    case SpecMethod::kDraftModel: return "draft";
  }
  return "unknown";
}

Result<SpecMethod> parse_spec_method(std::string_view s) {
  if (s == "none" || s == "off" || s.empty()) return SpecMethod::kNone;
  if (s == "ngram") return SpecMethod::kNgram;
  if (s == "draft") return SpecMethod::kDraftModel;
  return invalid_argument(
      fmt::format("unknown speculation method '{}' (choose none, ngram or draft)", s));
}

Status Speculator::validate(const SpecOptions& s) {
  if (s.max_draft < 1 || s.max_draft > kMaxDraftTokens) {
    return invalid_argument(fmt::format("draft tokens per step must be in [1, {}], got {}",
                                        kMaxDraftTokens, s.max_draft));
  }
  if (s.max_rows < 0) return invalid_argument("the speculation row limit must be >= 0");
  if (s.ngram_min < 1 || s.ngram_min > s.ngram_max || s.ngram_max > 16) {
    return invalid_argument(fmt::format(
        "n-gram sizes must satisfy 1 <= min <= max <= 16, got {}..{}", s.ngram_min, s.ngram_max));
  }
  if (s.method == SpecMethod::kDraftModel && !s.draft_model) {
    return invalid_argument("speculation with a draft model needs a draft model (--draft-model)");
  }
  return Status::ok();
}

Result<Speculator> Speculator::create(const SpecOptions& options, const model::Tokenizer& target,
                                      int32_t n_vocab, int32_t n_slots, int64_t ctx_size,
                                      kernels::DType kv_dtype) {
  std::unique_ptr<ModelDrafter> drafter;
  if (options.draft_model) {
    if (options.draft_tokenizer) {
      TS_RETURN_IF_ERROR(check_same_vocabulary(target, *options.draft_tokenizer));
    }
    TS_ASSIGN_OR_RETURN(drafter, ModelDrafter::create(options.draft_model, n_vocab, n_slots,
                                                      ctx_size, kv_dtype));
  }
  return Speculator(options, std::move(drafter));
}

Speculator::Speculator(const SpecOptions& options, std::unique_ptr<ModelDrafter> draft_model)
    : opt_(options),
      ngram_(options.ngram_min, options.ngram_max),
      draft_model_(std::move(draft_model)) {}

Drafter* Speculator::drafter_for(const Request& r) {
  SpecMethod m = opt_.method;
  if (r.speculative == SpecMode::kOff || r.structured) return nullptr;
  if (r.speculative == SpecMode::kOn && m == SpecMethod::kNone) m = SpecMethod::kNgram;
  switch (m) {
    case SpecMethod::kNone: return nullptr;
    case SpecMethod::kNgram: return &ngram_;
    case SpecMethod::kDraftModel: return draft_model_.get();
  }
  return nullptr;
}

void Speculator::admitted(Sequence& s) {
  if (drafter_for(s.request) != nullptr) s.spec_k = opt_.max_draft;
}

void Speculator::preempted(Sequence& s) {
  finished(s);
  s.draft.clear();
  s.draft_q.clear();
}

void Speculator::finished(Sequence& s) {
  if (Drafter* d = drafter_for(s.request)) d->forget(s);
}

void Speculator::prefill(const StepPlan& plan, int64_t n_running, ThreadPool* pool) {
  if (!draft_model_) return;
  if (2 * n_running > opt_.max_rows) return;
  std::vector<Drafter::PrefillChunk> chunks;
  for (const ScheduledSeq& e : plan.seqs) {
    if (e.n_rows > 1 && drafter_for(e.seq->request) == draft_model_.get()) {
      chunks.push_back({e.seq, e.seq->n_computed, e.seq->n_computed + e.n_rows});
    }
  }
  if (chunks.empty()) return;
  if (const Status st = draft_model_->prefill(chunks, pool); !st.is_ok()) {
    log_warn("engine: the draft model's prefill failed: {}", st.to_string());
  }
}

void Speculator::propose(const StepPlan& plan, int64_t n_running, ThreadPool* pool) {
  prefill(plan, n_running, pool);
  std::vector<DraftRequest> by_ngram;
  std::vector<DraftRequest> by_model;
  for (const ScheduledSeq& e : plan.seqs) {
    e.seq->draft.clear();
    e.seq->draft_q.clear();
    if (e.n_draft_max <= 0) continue;
    Drafter* d = drafter_for(e.seq->request);
    if (d == &ngram_) by_ngram.push_back({e.seq, e.n_draft_max});
    if (d != nullptr && d == draft_model_.get()) by_model.push_back({e.seq, e.n_draft_max});
  }
  const auto run = [&](Drafter& d, const std::vector<DraftRequest>& reqs) {
    if (reqs.empty()) return;
    const Status st = d.propose(reqs, pool);
    if (st.is_ok()) return;
    log_warn("engine: {} drafter failed, stepping without drafts: {}", d.name(), st.to_string());
    for (const DraftRequest& r : reqs) {
      r.seq->draft.clear();
      r.seq->draft_q.clear();
      d.forget(*r.seq);
    }
  };
  run(ngram_, by_ngram);
  if (draft_model_) run(*draft_model_, by_model);
}

void Speculator::verified(Sequence& s, int32_t n_drafted, int32_t n_accepted) {
  if (Drafter* d = drafter_for(s.request)) {
    d->verified(s);
    adapt_draft_length(s, n_drafted, n_accepted, opt_.max_draft);
  }
  s.draft.clear();
  s.draft_q.clear();
}

}  // namespace tessera::engine
