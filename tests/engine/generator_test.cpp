#include "tessera/engine/generator.h"

#include <gtest/gtest.h>

#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::engine {
namespace generator_test {

TEST(Utf8, CompletePrefix) {
  EXPECT_EQ(complete_utf8_prefix("abc"), 3u);
  EXPECT_EQ(complete_utf8_prefix("a\xE2\x96"), 1u);        // cut 3-byte sequence
  EXPECT_EQ(complete_utf8_prefix("a\xE2\x96\x81"), 4u);    // complete
  EXPECT_EQ(complete_utf8_prefix("\xF0\x9F\x98"), 0u);     // cut 4-byte sequence
  EXPECT_EQ(complete_utf8_prefix("\xC3"), 0u);
  EXPECT_EQ(complete_utf8_prefix(""), 0u);
}

class GeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kQ8_0;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_.file("tiny.gguf")).is_ok());
    auto m = model::load_model(dir_.file("tiny.gguf"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::move(m).value();
  }
  testing::TempDir dir_;
  std::unique_ptr<model::Model> model_;
};

TEST_F(GeneratorTest, ChunkedPrefillEqualsWholePrefill) {
  const std::vector<int32_t> prompt = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49};
  GenerateOptions o;
  o.sampling.temperature = 0.0f;
  o.max_tokens = 8;
  o.stop_at_end_of_generation = false;
  Generator g(*model_, nullptr, nullptr);
  auto whole = g.generate(prompt, o);
  o.prefill_chunk = 3;
  auto chunked = g.generate(prompt, o);
  ASSERT_TRUE(whole.is_ok() && chunked.is_ok());
  EXPECT_EQ(whole->tokens, chunked->tokens);
  ASSERT_EQ(whole->last_prompt_logits.size(), chunked->last_prompt_logits.size());
  for (size_t i = 0; i < whole->last_prompt_logits.size(); ++i) {
    EXPECT_NEAR(whole->last_prompt_logits[i], chunked->last_prompt_logits[i], 1e-4);
  }
}

TEST_F(GeneratorTest, SeededSamplingIsDeterministic) {
  GenerateOptions o;
  o.sampling.temperature = 1.0f;
  o.sampling.seed = 7;
  o.max_tokens = 16;
  o.stop_at_end_of_generation = false;
  Generator g(*model_, nullptr, nullptr);
  auto a = g.generate(std::vector<int32_t>{1, 5}, o);
  auto b = g.generate(std::vector<int32_t>{1, 5}, o);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_EQ(a->tokens.size(), 16u);
}

TEST_F(GeneratorTest, RefusesWhatDoesNotFit) {
  Generator g(*model_, nullptr, nullptr);
  GenerateOptions o;
  EXPECT_EQ(g.generate(std::vector<int32_t>{}, o).status().code(), ErrorCode::kInvalidArgument);
  o.max_tokens = 100000;
  EXPECT_EQ(g.generate(std::vector<int32_t>{1}, o).status().code(), ErrorCode::kOutOfRange);
  o.max_tokens = 4;
  o.sampling.top_p = 5.0f;
  EXPECT_EQ(g.generate(std::vector<int32_t>{1}, o).status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(GeneratorTest, CallbackCanStop) {
  Generator g(*model_, nullptr, nullptr);
  GenerateOptions o;
  o.max_tokens = 10;
  auto r = g.generate(std::vector<int32_t>{1}, o, [](std::string_view) { return false; });
  ASSERT_TRUE(r.is_ok());
  // Without a tokenizer no text is produced, so the callback is never asked.
  EXPECT_EQ(r->tokens.size(), 10u);
}

}  // namespace generator_test
}  // namespace tessera::engine
