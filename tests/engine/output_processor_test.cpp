// OutputProcessor (engine/output_processor.h) on its own, over a small fake vocabulary: stop
// strings are cut across tokens and never emitted, held-back text comes out in the finish event,
// end-of-generation ends without an event (unless ignore_eos), max_tokens and the context end
// with kLength, logprobs and the top alternatives, usage and timings.
#include "tessera/engine/output_processor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::engine {
namespace output_processor_test {

// 0 ends generation; 4 and 5 are the two halves of "€" (E2 82 | AC).
class FakeTokenizer final : public model::Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  std::string token_to_piece(int32_t id, bool = false) const override {
    return std::string(kPieces[static_cast<size_t>(id)]);
  }
  int32_t n_vocab() const override { return static_cast<int32_t>(std::size(kPieces)); }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return 0; }
  bool is_end_of_generation(int32_t id) const override { return id == 0; }
  std::string_view token_text(int32_t id) const override {
    return kPieces[static_cast<size_t>(id)];
  }

 private:
  static constexpr std::string_view kPieces[] = {"", "a", "b", "c", "\xE2\x82", "\xAC", " "};
};

class OutputProcessorTest : public ::testing::Test {
 protected:
  std::unique_ptr<Sequence> seq(Request r, int64_t submit_ns = 0) {
    if (r.prompt.empty()) r.prompt = {1, 2};
    return std::make_unique<Sequence>(1, std::move(r), nullptr, submit_ns);
  }
  // Appends t to s and processes it, as the engine does.
  OutputProcessor::TokenOutput push(Sequence& s, int32_t t, std::span<const float> raw = {}) {
    s.tokens.push_back(t);
    return out_.on_token(s, t, raw);
  }
  static Request with_stop(std::vector<std::string> stop, int32_t max_tokens = 16) {
    Request r;
    r.stop = std::move(stop);
    r.max_tokens = max_tokens;
    return r;
  }

  FakeTokenizer tok_;
  OutputProcessor out_{tok_, 64};
};

TEST_F(OutputProcessorTest, StopStringAcrossTokensIsCutAndNeverEmitted) {
  auto s = seq(with_stop({"bc"}));
  auto o = push(*s, 1);
  ASSERT_TRUE(o.event);
  EXPECT_EQ(o.event->text, "a");
  EXPECT_EQ(o.event->piece, "a");
  EXPECT_FALSE(o.finish);
  o = push(*s, 2);  // "b" may start "bc": held back
  ASSERT_TRUE(o.event);
  EXPECT_EQ(o.event->text, "");
  EXPECT_EQ(o.event->piece, "b");
  EXPECT_FALSE(o.finish);
  o = push(*s, 3);
  ASSERT_TRUE(o.event);
  EXPECT_EQ(o.event->text, "");
  ASSERT_TRUE(o.finish);
  EXPECT_EQ(*o.finish, FinishReason::kStop);
  EXPECT_EQ(out_.finish(*s, FinishReason::kStop, Status::ok(), 0).text, "");
}

TEST_F(OutputProcessorTest, HeldBackTextComesOutWhenTheRequestEndsAtItsLength) {
  auto s = seq(with_stop({"ab"}, 2));
  auto o = push(*s, 3);
  EXPECT_EQ(o.event->text, "c");
  EXPECT_FALSE(o.finish);
  o = push(*s, 1);
  EXPECT_EQ(o.event->text, "");
  ASSERT_TRUE(o.finish);
  EXPECT_EQ(*o.finish, FinishReason::kLength);
  EXPECT_EQ(out_.finish(*s, FinishReason::kLength, Status::ok(), 0).text, "a");
}

TEST_F(OutputProcessorTest, IncompleteUtf8IsHeldUntilComplete) {
  auto s = seq(with_stop({}));
  auto o = push(*s, 4);
  EXPECT_EQ(o.event->text, "");
  EXPECT_EQ(o.event->piece, "\xE2\x82");
  o = push(*s, 5);
  EXPECT_EQ(o.event->text, "\xE2\x82\xAC");
  EXPECT_FALSE(o.finish);
}

TEST_F(OutputProcessorTest, EndOfGenerationStopsWithoutAnEventUnlessIgnored) {
  auto s = seq(with_stop({}));
  auto o = push(*s, 0);
  EXPECT_FALSE(o.event);
  ASSERT_TRUE(o.finish);
  EXPECT_EQ(*o.finish, FinishReason::kStop);

  Request r = with_stop({});
  r.ignore_eos = true;
  auto t = seq(std::move(r));
  o = push(*t, 0);
  ASSERT_TRUE(o.event);
  EXPECT_EQ(o.event->token, 0);
  EXPECT_FALSE(o.finish);
}

TEST_F(OutputProcessorTest, TheContextEndsARequestAndBoundsItsBudget) {
  OutputProcessor small(tok_, 4);
  auto s = seq(with_stop({}, 10));  // prompt of 2 in a context of 4
  EXPECT_EQ(small.budget(*s), 2);
  s->tokens.push_back(1);
  EXPECT_FALSE(small.on_token(*s, 1, {}).finish);
  EXPECT_EQ(small.budget(*s), 1);
  s->tokens.push_back(2);
  const auto o = small.on_token(*s, 2, {});
  ASSERT_TRUE(o.finish);
  EXPECT_EQ(*o.finish, FinishReason::kLength);

  auto t = seq(with_stop({}, 3));
  EXPECT_EQ(out_.budget(*t), 3);  // max_tokens first
}

TEST_F(OutputProcessorTest, LogprobsOfTheChosenTokenAndTheTopAlternatives) {
  const std::vector<float> raw = {0.0f, 1.0f, 3.0f, 3.0f, -1.0f, 0.5f, 2.0f};
  double z = 0.0;
  for (float v : raw) z += std::exp(static_cast<double>(v));
  const auto lp = [&](int32_t t) { return raw[static_cast<size_t>(t)] - std::log(z); };

  Request r = with_stop({});
  r.n_logprobs = 3;
  auto s = seq(std::move(r));
  const auto o = push(*s, 1, raw);
  ASSERT_TRUE(o.event);
  EXPECT_NEAR(o.event->logprob, lp(1), 1e-5);
  ASSERT_EQ(o.event->top.size(), 3u);
  EXPECT_EQ(o.event->top[0].token, 2);  // a tie goes to the lower id
  EXPECT_EQ(o.event->top[1].token, 3);
  EXPECT_EQ(o.event->top[2].token, 6);
  for (const TokenLogprob& t : o.event->top) EXPECT_NEAR(t.logprob, lp(t.token), 1e-5);

  Request only = with_stop({});
  only.n_logprobs = 0;
  auto u = seq(std::move(only));
  const auto p = push(*u, 6, raw);
  EXPECT_TRUE(p.event->top.empty());
  EXPECT_NEAR(p.event->logprob, lp(6), 1e-5);
}

TEST_F(OutputProcessorTest, TheFinishEventCarriesUsageAndTimings) {
  auto s = seq(with_stop({}), 1'000'000'000);
  s->n_cached = 1;
  s->first_scheduled_ns = 1'500'000'000;
  s->first_token_ns = 2'000'000'000;
  push(*s, 1);
  push(*s, 2);
  FinishEvent f = out_.finish(*s, FinishReason::kError, internal_error("boom"), 4'000'000'000);
  EXPECT_EQ(f.reason, FinishReason::kError);
  EXPECT_EQ(f.error.message(), "boom");
  EXPECT_EQ(f.usage.prompt_tokens, 2);
  EXPECT_EQ(f.usage.completion_tokens, 2);
  EXPECT_EQ(f.usage.cached_tokens, 1);
  EXPECT_DOUBLE_EQ(f.timings.queued, 0.5);
  EXPECT_DOUBLE_EQ(f.timings.first_token, 1.0);
  EXPECT_DOUBLE_EQ(f.timings.total, 3.0);

  auto never = seq(with_stop({}), 1'000'000'000);  // cancelled while waiting
  f = out_.finish(*never, FinishReason::kCancelled, Status::ok(), 2'000'000'000);
  EXPECT_EQ(f.usage.completion_tokens, 0);
  EXPECT_DOUBLE_EQ(f.timings.queued, 0.0);
  EXPECT_DOUBLE_EQ(f.timings.first_token, 0.0);
  EXPECT_DOUBLE_EQ(f.timings.total, 1.0);
}

}  // namespace output_processor_test
}  // namespace tessera::engine
