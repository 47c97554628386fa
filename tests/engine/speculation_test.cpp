// Speculator (engine/speculation.h) with the n-gram drafter, without a model: option checks,
// which requests speculate, the draft length at admission and after each verification, drafts
// only where the plan allows them and within the allowance, and what preemption clears.
#include "tessera/engine/speculation.h"

#include <gtest/gtest.h>

#include "tessera/engine/engine.h"
#include "tessera/engine/token_constraint.h"

namespace tessera::engine {
namespace speculation_test {

SpecOptions ngram_options(int32_t max_draft = 5) {
  SpecOptions o;
  o.method = SpecMethod::kNgram;
  o.max_draft = max_draft;
  return o;
}

std::unique_ptr<Sequence> seq(std::vector<int32_t> prompt, SpecMode mode = SpecMode::kDefault) {
  Request r;
  r.prompt = std::move(prompt);
  r.speculative = mode;
  auto s = std::make_unique<Sequence>(1, std::move(r), nullptr, 0);
  s->n_computed = static_cast<int64_t>(s->tokens.size()) - 1;  // decoding: the last token pends
  return s;
}

TEST(Speculator, ValidateRefusesOptionsOutOfRange) {
  EXPECT_TRUE(Speculator::validate(SpecOptions{}).is_ok());
  SpecOptions o;
  o.max_draft = 0;
  EXPECT_EQ(Speculator::validate(o).code(), ErrorCode::kInvalidArgument);
  o.max_draft = kMaxDraftTokens + 1;
  EXPECT_EQ(Speculator::validate(o).code(), ErrorCode::kInvalidArgument);
  o = SpecOptions{};
  o.max_rows = -1;
  EXPECT_EQ(Speculator::validate(o).code(), ErrorCode::kInvalidArgument);
  o = SpecOptions{};
  o.ngram_min = 3;
  o.ngram_max = 2;
  EXPECT_EQ(Speculator::validate(o).code(), ErrorCode::kInvalidArgument);
  o = SpecOptions{};
  o.method = SpecMethod::kDraftModel;
  EXPECT_EQ(Speculator::validate(o).code(), ErrorCode::kInvalidArgument);
}

TEST(Speculator, ParsesAndNamesMethods) {
  EXPECT_EQ(*parse_spec_method("off"), SpecMethod::kNone);
  EXPECT_EQ(*parse_spec_method("ngram"), SpecMethod::kNgram);
  EXPECT_EQ(*parse_spec_method("draft"), SpecMethod::kDraftModel);
  EXPECT_EQ(parse_spec_method("eagle").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(spec_method_name(SpecMethod::kDraftModel), "draft");
}

TEST(Speculator, WhichRequestsSpeculate) {
  Speculator none(SpecOptions{});
  Request r;
  EXPECT_EQ(none.drafter_for(r), nullptr);
  r.speculative = SpecMode::kOn;  // n-gram lookup when the engine has no method
  ASSERT_NE(none.drafter_for(r), nullptr);
  EXPECT_EQ(none.drafter_for(r)->name(), "ngram");

  Speculator ngram(ngram_options());
  r.speculative = SpecMode::kDefault;
  ASSERT_NE(ngram.drafter_for(r), nullptr);
  r.speculative = SpecMode::kOff;
  EXPECT_EQ(ngram.drafter_for(r), nullptr);
  r.speculative = SpecMode::kOn;
  r.structured = std::make_shared<StructuredOutput>();  // structured output never speculates
  EXPECT_EQ(ngram.drafter_for(r), nullptr);
}

TEST(Speculator, AdmissionStartsSpeculatingSequencesAtTheFullDraftLength) {
  Speculator spec(ngram_options(3));
  auto on = seq({1, 2, 3});
  auto off = seq({1, 2, 3}, SpecMode::kOff);
  spec.admitted(*on);
  spec.admitted(*off);
  EXPECT_EQ(on->spec_k, 3);
  EXPECT_EQ(off->spec_k, 0);
}

TEST(Speculator, DraftsOnlyWhereThePlanAllowsAndWithinTheAllowance) {
  Speculator spec(ngram_options());
  auto a = seq({7, 8, 9, 7, 8, 9, 7, 8});  // repeats: drafts 9, 7, 8, ...
  auto b = seq({7, 8, 9, 7, 8, 9, 7, 8});
  b->draft = {5, 5};  // stale drafts from an earlier step
  auto c = seq({7, 8, 9, 7, 8, 9, 7, 8}, SpecMode::kOff);
  StepPlan plan;
  plan.seqs = {{a.get(), 1, 2, true}, {b.get(), 1, 0, true}, {c.get(), 1, 4, true}};
  spec.propose(plan, 3, nullptr);
  EXPECT_EQ(a->draft, (std::vector<int32_t>{9, 7}));
  EXPECT_TRUE(b->draft.empty());
  EXPECT_TRUE(c->draft.empty());
}

TEST(Speculator, VerificationAdaptsTheDraftLengthAndClearsTheDrafts) {
  Speculator spec(ngram_options(4));
  auto s = seq({7, 8, 9, 7, 8, 9, 7, 8});
  spec.admitted(*s);
  s->spec_k = 3;
  s->draft = {9, 7, 8};
  spec.verified(*s, 3, 3);  // all accepted: one longer
  EXPECT_EQ(s->spec_k, 4);
  EXPECT_TRUE(s->draft.empty());
  spec.verified(*s, 4, 4);  // capped at max_draft
  EXPECT_EQ(s->spec_k, 4);
  s->draft = {1, 2, 3, 4};
  spec.verified(*s, 4, 1);  // one accepted: the accepted count plus one
  EXPECT_EQ(s->spec_k, 2);
  EXPECT_TRUE(s->draft.empty());
  spec.verified(*s, 0, 0);  // nothing drafted: nothing learnt
  EXPECT_EQ(s->spec_k, 2);
}

TEST(Speculator, PreemptionDropsTheDraftsAndTheDrafterState) {
  Speculator spec(ngram_options());
  auto s = seq({7, 8, 9, 7, 8, 9, 7, 8});
  StepPlan plan;
  plan.seqs = {{s.get(), 1, 3, true}};
  spec.propose(plan, 1, nullptr);
  ASSERT_FALSE(s->draft.empty());
  ASSERT_NE(s->draft_state, nullptr);
  spec.preempted(*s);
  EXPECT_TRUE(s->draft.empty());
  EXPECT_TRUE(s->draft_q.empty());
  EXPECT_EQ(s->draft_state, nullptr);
}

}  // namespace speculation_test
}  // namespace tessera::engine
