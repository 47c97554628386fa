#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tessera/bench/synthetic_prompts.h"
#include "tessera/model/synth.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/bench/trace.h"
#include "test_util.h"

namespace tessera::bench {
namespace prompts_test {

TEST(LengthSpec, ParsesAndDraws) {
  EXPECT_EQ(parse_length_spec("64")->a, 64);
  EXPECT_EQ(parse_length_spec("uniform:10:20")->dist, LengthDist::kUniform);
  EXPECT_FALSE(parse_length_spec("uniform:20:10").is_ok());
  EXPECT_FALSE(parse_length_spec("zipf:3").is_ok());
  EXPECT_FALSE(parse_length_spec("0").is_ok());
  Rng rng(1);
  const LengthSpec u = *parse_length_spec("uniform:10:20");
  int lo = 100, hi = 0;
  double sum = 0;
  for (int i = 0; i < 20000; ++i) {
    const int v = draw_length(u, rng);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  EXPECT_EQ(lo, 10);
  EXPECT_EQ(hi, 20);
  EXPECT_NEAR(sum / 20000, 15.0, 0.1);
  const LengthSpec n = *parse_length_spec("normal:100:10");
  sum = 0;
  for (int i = 0; i < 20000; ++i) sum += draw_length(n, rng);
  EXPECT_NEAR(sum / 20000, 100.0, 0.5);
  EXPECT_EQ(format_length_spec(u), "uniform:10:20");
}

TEST(SyntheticPrompts, TextPromptsHaveOneWordPerToken) {
  PromptSynthesizer synth;
  SyntheticOptions o;
  o.input_len = *parse_length_spec("uniform:5:50");
  o.output_len = *parse_length_spec("7");
  o.n_prompts = 50;
  o.seed = 3;
  const InMemoryLibrary lib = make_synthetic_library(o, synth);
  ASSERT_EQ(lib.size(), 50u);
  for (size_t i = 0; i < lib.size(); ++i) {
    const QuerySample& s = lib.sample(i);
    EXPECT_GE(s.input_tokens, 5);
    EXPECT_LE(s.input_tokens, 50);
    EXPECT_EQ(std::count(s.prompt.begin(), s.prompt.end(), ' '), s.input_tokens);
    EXPECT_EQ(s.max_output_tokens, 7);
    EXPECT_TRUE(s.tokens.empty());
  }
  // Same seed, same library.
  EXPECT_EQ(make_synthetic_library(o, synth).sample(9).prompt, lib.sample(9).prompt);
}

// With a real vocabulary (byte tokens included), synthetic prompts are still valid UTF-8 text,
// so they can be sent as JSON (regression: byte-token prompts made the request body unencodable).
TEST(SyntheticPrompts, VocabularyPromptsAreValidUtf8) {
  const model::Metadata vocab = model::synthetic_vocab(1024);
  auto tok = model::make_tokenizer(vocab);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  PromptSynthesizer synth(tok->get());
  SyntheticOptions o;
  o.input_len = *parse_length_spec("128");
  o.output_len = *parse_length_spec("4");
  o.n_prompts = 64;
  o.seed = 1;
  const InMemoryLibrary lib = make_synthetic_library(o, synth);
  for (size_t i = 0; i < lib.size(); ++i) {
    const QuerySample& s = lib.sample(i);
    EXPECT_EQ(s.input_tokens, 128);
    EXPECT_NO_THROW((void)nlohmann::json({{"prompt", s.prompt}}).dump()) << "prompt " << i;
  }
}

TEST(PromptFile, ReadsJsonlAndReportsBadLines) {
  testing::TempDir dir;
  const std::string path = dir.file("p.jsonl");
  {
    std::ofstream f(path);
    f << R"({"prompt": "hello there", "max_tokens": 5})" << "\n\n"
      << R"({"text": "just text"})" << "\n";
  }
  auto lib = load_prompt_file(path, *parse_length_spec("9"), 0, nullptr);
  ASSERT_TRUE(lib.is_ok()) << lib.status().to_string();
  ASSERT_EQ(lib->size(), 2u);
  EXPECT_EQ(lib->sample(0).max_output_tokens, 5);
  EXPECT_EQ(lib->sample(1).max_output_tokens, 9);
  EXPECT_EQ(lib->sample(1).prompt, "just text");
  {
    std::ofstream f(path);
    f << R"({"prompt": "ok"})" << "\n" << "{broken\n";
  }
  auto bad = load_prompt_file(path, *parse_length_spec("9"), 0, nullptr);
  EXPECT_EQ(bad.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(bad.status().message().find(":2:"), std::string::npos);
  EXPECT_EQ(load_prompt_file(dir.file("none"), {}, 0, nullptr).status().code(),
            ErrorCode::kNotFound);
}

TEST(Trace, TimestampsParse) {
  const double a = *parse_timestamp("2023-11-16 18:17:03.9799600");
  const double b = *parse_timestamp("2023-11-16 18:17:04.0319600");
  EXPECT_NEAR(b - a, 0.052, 1e-6);
  EXPECT_NEAR(*parse_timestamp("1970-01-02 00:00:01"), 86401.0, 1e-9);
  EXPECT_FALSE(parse_timestamp("yesterday").is_ok());
}

// The words of a synthesized prompt (one per token), each with its leading space.
std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  size_t p = 0;
  while ((p = s.find(' ', p)) != std::string::npos) {
    const size_t q = s.find(' ', p + 1);
    w.push_back(s.substr(p, q == std::string::npos ? std::string::npos : q - p));
    p = q;
  }
  return w;
}

TEST(Trace, MooncakeHashIdsShareExactPrefixes) {
  testing::TempDir dir;
  const std::string path = dir.file("t.jsonl");
  {
    std::ofstream f(path);
    f << R"({"timestamp": 1000, "input_length": 10, "output_length": 3, "hash_ids": [0, 1, 2]})" << "\n"
      << R"({"timestamp": 1500, "input_length": 9, "output_length": 2, "hash_ids": [0, 1, 7]})" << "\n"
      << R"({"timestamp": 3000, "input_length": 5, "output_length": 0, "hash_ids": [5, 6]})" << "\n";
  }
  ASSERT_EQ(*detect_trace_format(path), TraceFormat::kMooncake);
  auto entries = load_trace(path, TraceFormat::kMooncake);
  ASSERT_TRUE(entries.is_ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_DOUBLE_EQ((*entries)[1].t_s, 0.5);
  ReplayOptions o;
  o.block_tokens = 4;  // blocks of 4 tokens: [0]=0..3, [1]=4..7, last partial
  o.time_scale = 2.0;
  PromptSynthesizer synth;  // text: one word per token
  const Replay r = build_replay(*entries, o, synth);
  ASSERT_EQ(r.library.size(), 3u);
  EXPECT_DOUBLE_EQ(r.times_s[2], 1.0);  // 2 s compressed by 2
  const auto w0 = words(r.library.sample(0).prompt);
  const auto w1 = words(r.library.sample(1).prompt);
  const auto w2 = words(r.library.sample(2).prompt);
  ASSERT_EQ(w0.size(), 10u);
  ASSERT_EQ(w1.size(), 9u);
  ASSERT_EQ(w2.size(), 5u);
  // Blocks 0 and 1 (8 tokens) are shared exactly; block 2 vs 7 differ.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(w0[i], w1[i]) << i;
  EXPECT_NE(w0[8], w1[8]);  // block 2 vs block 7
  EXPECT_NE(w2[0] + w2[1] + w2[2] + w2[3], w0[0] + w0[1] + w0[2] + w0[3]);
  EXPECT_EQ(r.library.sample(2).max_output_tokens, 1);  // at least one token is asked for
}

TEST(Trace, ScaledBlocksKeepTheSharingAtAFractionOfTheLength) {
  testing::TempDir dir;
  const std::string path = dir.file("t.jsonl");
  {
    std::ofstream f(path);
    f << R"({"timestamp": 0, "input_length": 1500, "output_length": 3, "hash_ids": [0, 1, 2]})" << "\n"
      << R"({"timestamp": 10, "input_length": 1100, "output_length": 2, "hash_ids": [0, 1, 9]})" << "\n";
  }
  auto entries = load_trace(path, TraceFormat::kMooncake);
  ASSERT_TRUE(entries.is_ok()) << entries.status().to_string();
  ReplayOptions o;
  o.scaled_block_tokens = 8;  // 512-token blocks replayed as 8: lengths x 8/512
  PromptSynthesizer synth;
  const Replay r = build_replay(*entries, o, synth);
  const auto w0 = words(r.library.sample(0).prompt);
  const auto w1 = words(r.library.sample(1).prompt);
  ASSERT_EQ(w0.size(), 1500u * 8 / 512);  // 23
  ASSERT_EQ(w1.size(), 1100u * 8 / 512);  // 17
  for (int i = 0; i < 16; ++i) EXPECT_EQ(w0[i], w1[i]) << i;  // blocks 0 and 1
  EXPECT_NE(w0[16], w1[16]);                                   // block 2 vs block 9
}

TEST(Trace, SharedSamplesLoad) {
  TS_SKIP_WITHOUT_SHARED(azure, "traces/azure-llm-2023/AzureLLMInferenceTrace_code.csv");
  auto a = load_trace(azure.string(), *detect_trace_format(azure.string()), 100);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->size(), 100u);
  EXPECT_EQ((*a)[0].input_tokens, 4808);
  EXPECT_EQ((*a)[0].output_tokens, 10);
  EXPECT_NEAR((*a)[1].t_s, 0.052, 1e-6);
  TS_SKIP_WITHOUT_SHARED(sw, "traces/vidur/splitwise_code.csv");
  auto s = load_trace(sw.string(), *detect_trace_format(sw.string()), 3);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ((*s)[2].input_tokens, 110);
  EXPECT_NEAR((*s)[2].t_s, 0.098189, 1e-9);
  TS_SKIP_WITHOUT_SHARED(mc, "traces/mooncake/conversation_trace.jsonl");
  auto m = load_trace(mc.string(), TraceFormat::kMooncake, 50);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)[0].hash_ids.size(), 14u);
}

TEST(Trace, BadLinesNameTheLine) {
  testing::TempDir dir;
  const std::string path = dir.file("t.csv");
  {
    std::ofstream f(path);
    f << "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,10,5\nabc,1,2\n";
  }
  auto t = load_trace(path, TraceFormat::kSplitwise);
  EXPECT_EQ(t.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(t.status().message().find(":3:"), std::string::npos);
}

}  // namespace prompts_test
}  // namespace tessera::bench
