#include "tessera/engine/engine.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <future>
#include <map>
#include <set>

#include "tessera/engine/generator.h"
#include "tessera/engine/json_schema.h"
#include "tessera/engine/token_constraint.h"
#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::engine {
namespace engine_test {

struct Outcome {
  std::vector<int32_t> tokens;
  std::string text;
  FinishEvent finish;
  std::vector<TokenEvent> events;
  bool finished = false;
};

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kQ8_0;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("tiny.gguf")).is_ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    auto m = model::load_model(dir_->file("tiny.gguf"));
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::shared_ptr<model::Model>(std::move(m).value());
    auto t = model::make_tokenizer(model_->file().metadata);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    tokenizer_ = std::shared_ptr<const model::Tokenizer>(std::move(t).value());
  }

  std::unique_ptr<Engine> make(EngineOptions o) {
    if (o.n_threads == 0) o.n_threads = 1;
    if (o.ctx_size == 0) o.ctx_size = 256;
    auto e = Engine::create(model_, tokenizer_, o);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    return e.is_ok() ? std::move(e).value() : nullptr;
  }

  static Request greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
    Request r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0.0f;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
  }

  // Submits every request, then steps the engine until all have finished.
  std::vector<Outcome> run(Engine& e, const std::vector<Request>& reqs) {
    std::vector<Outcome> out(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      auto id = e.submit(reqs[i], [&out, i](Event&& ev) {
        Outcome& o = out[i];
        if (auto* t = std::get_if<TokenEvent>(&ev.body)) {
          o.tokens.push_back(t->token);
          o.text += t->text;
          o.events.push_back(*t);
        } else {
          o.finish = std::get<FinishEvent>(ev.body);
          o.text += o.finish.text;
          o.finished = true;
        }
      });
      EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    }
    for (int guard = 0; guard < 100000 && e.step(); ++guard) {
    }
    for (const Outcome& o : out) EXPECT_TRUE(o.finished);
    return out;
  }

  std::vector<int32_t> prompt(int n, int seed) {
    std::vector<int32_t> p = {1};
    for (int i = 1; i < n; ++i) p.push_back(3 + (seed * 131 + i * 17) % 400);
    return p;
  }

  static testing::TempDir* dir_;
  std::shared_ptr<model::Model> model_;
  std::shared_ptr<const model::Tokenizer> tokenizer_;
};
testing::TempDir* EngineTest::dir_ = nullptr;

// Structured output on random weights: whatever the model prefers, every request ends (stop) with
// a JSON document that parses and satisfies the schema (no free-text field, so the value must
// close within the token limit); greedy, sampled and speculation-requested alike.
TEST_F(EngineTest, StructuredOutputAlwaysGivesValidJson) {
  auto schema = JsonSchema::compile(nlohmann::json::parse(R"({"type": "object",
      "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"},
                     "k": {"enum": ["red", "green"]}, "xs": {"type": "array",
                     "items": {"type": "null"}, "maxItems": 2}},
      "required": ["ok", "n", "k"], "additionalProperties": false})"));
  ASSERT_TRUE(schema.is_ok()) << schema.status().to_string();
  auto spec = std::make_shared<StructuredOutput>();
  spec->schema = *schema;
  spec->vocab = make_token_vocabulary(*tokenizer_);
  // Random weights like whitespace: a newline and up to 20 spaces in each of the ~25 gaps of
  // such a document, so the limit is generous.
  EngineOptions o;
  o.ctx_size = 1024;
  auto e = make(o);
  std::vector<Request> reqs;
  for (int i = 0; i < 6; ++i) {
    Request r = greedy({1, 17 + i, 42}, 1000);
    r.ignore_eos = false;
    r.structured = spec;
    if (i % 2 == 1) {
      r.sampling.temperature = 1.0f;
      r.sampling.seed = static_cast<uint64_t>(i);
    }
    if (i == 4) r.speculative = SpecMode::kOn;
    reqs.push_back(std::move(r));
  }
  const auto out = run(*e, reqs);
  for (const Outcome& got : out) {
    ASSERT_TRUE(got.finished);
    EXPECT_EQ(got.finish.reason, FinishReason::kStop) << got.text;
    nlohmann::json v;
    ASSERT_NO_THROW(v = nlohmann::json::parse(got.text)) << got.text;
    ASSERT_TRUE(v.is_object()) << got.text;
    EXPECT_TRUE(v["ok"].is_boolean()) << got.text;
    EXPECT_TRUE(v["n"].is_number_integer()) << got.text;
    EXPECT_TRUE(v["k"] == "red" || v["k"] == "green") << got.text;
    for (const auto& [k, x] : v.items()) {
      EXPECT_TRUE(k == "ok" || k == "n" || k == "k" || k == "xs") << got.text;
      if (k == "xs") {
        EXPECT_LE(x.size(), 2u) << got.text;
      }
    }
  }
  // A vocabulary larger than the model's output is refused at submit.
  auto other = std::make_shared<StructuredOutput>();
  other->schema = *schema;
  other->vocab = std::make_shared<TokenVocabulary>(
      std::vector<std::string>(static_cast<size_t>(tokenizer_->n_vocab()) + 1, "x"),
      std::vector<int32_t>{});
  Request bad = greedy({1, 2}, 4);
  bad.structured = other;
  EXPECT_FALSE(e->submit(bad, [](Event&&) {}).is_ok());
}

// The constraint's counters: every token a constrained request emits is counted with the time
// its mask took; free-text requests leave both at zero.
TEST_F(EngineTest, ConstraintTimeCountsConstrainedTokensOnly) {
  auto schema = JsonSchema::compile(nlohmann::json::parse(
      R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
          "additionalProperties": false})"));
  ASSERT_TRUE(schema.is_ok()) << schema.status().to_string();
  auto spec = std::make_shared<StructuredOutput>();
  spec->schema = *schema;
  spec->vocab = make_token_vocabulary(*tokenizer_);
  EngineOptions o;
  o.ctx_size = 512;
  auto e = make(o);
  run(*e, {greedy({1, 5, 9}, 24), greedy({1, 6, 10}, 24)});
  EXPECT_EQ(e->stats().constrained_tokens, 0);
  EXPECT_EQ(e->stats().constraint_ns, 0);
  std::vector<Request> reqs;
  for (int i = 0; i < 3; ++i) {
    Request r = greedy({1, 30 + i, 7}, 200);
    r.structured = spec;
    reqs.push_back(std::move(r));
  }
  reqs.push_back(greedy({1, 2, 3}, 12));  // free text in the same batches
  const auto out = run(*e, reqs);
  int64_t n_constrained = 0;
  for (size_t i = 0; i < 3; ++i) n_constrained += out[i].finish.usage.completion_tokens;
  const EngineStats st = e->stats();
  EXPECT_GT(n_constrained, 0);
  EXPECT_EQ(st.constrained_tokens, n_constrained);
  EXPECT_GT(st.constraint_ns, 0);  // the engine runs on the real clock
  EXPECT_EQ(st.generated_tokens, n_constrained + 12 + 48);
}

TEST_F(EngineTest, GreedyMatchesTheSingleSequenceGenerator) {
  const std::vector<int32_t> p = prompt(23, 1);
  GenerateOptions g;
  g.sampling.temperature = 0.0f;
  g.max_tokens = 12;
  g.stop_at_end_of_generation = false;
  Generator gen(*model_, tokenizer_.get(), nullptr);
  auto want = gen.generate(p, g);
  ASSERT_TRUE(want.is_ok());

  EngineOptions o;
  o.block_size = 4;
  auto e = make(o);
  auto got = run(*e, {greedy(p, 12)});
  EXPECT_EQ(got[0].tokens, want->tokens);
  EXPECT_EQ(got[0].text, want->text);
  EXPECT_EQ(got[0].finish.reason, FinishReason::kLength);
  EXPECT_EQ(got[0].finish.usage.prompt_tokens, 23);
  EXPECT_EQ(got[0].finish.usage.completion_tokens, 12);
}

// Batch invariance: each request's greedy tokens do not depend on what else is in the batch
// (decode rows next to prefill chunks of other requests, different batch sizes).
TEST_F(EngineTest, ConcurrentGreedyRequestsGiveTheTokensEachGivesAlone) {
  std::vector<Request> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(greedy(prompt(5 + 9 * i, i), 10 + i));
  EngineOptions o;
  o.block_size = 8;
  o.max_running = 4;
  o.max_batch_tokens = 16;  // forces chunked prefill next to decodes
  o.prefix_cache = false;
  std::vector<Outcome> alone;
  for (const Request& r : reqs) alone.push_back(run(*make(o), {r})[0]);
  auto together = run(*make(o), reqs);
  std::set<int32_t> distinct;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(together[i].tokens, alone[i].tokens) << "request " << i;
    distinct.insert(alone[i].tokens.begin(), alone[i].tokens.end());
  }
  EXPECT_GT(distinct.size(), 10u) << "outputs too uniform for the comparison to mean much";
}

// The same over every weight type: each matmul output must not depend on how many tokens share the
// product (the tile kernels and vec_dot agree bit for bit).
TEST_F(EngineTest, BatchInvarianceHoldsForEveryWeightType) {
  for (kernels::DType dt : {kernels::DType::kF32, kernels::DType::kF16, kernels::DType::kBF16,
                            kernels::DType::kQ4_0, kernels::DType::kQ4_1, kernels::DType::kQ5_0,
                            kernels::DType::kQ5_1, kernels::DType::kQ4_K, kernels::DType::kQ6_K,
                            kernels::DType::kQ3_K, kernels::DType::kQ2_K, kernels::DType::kIQ4_NL,
                            kernels::DType::kIQ4_XS}) {
    SCOPED_TRACE(kernels::dtype_name(dt));
    model::SynthOptions so;
    so.shape = *model::find_synth_shape("tiny");
    so.shape.dim = 256;
    so.shape.ffn_dim = 512;
    so.dtype = dt;
    const std::string path = dir_->file("tiny-" + std::string(kernels::dtype_name(dt)) + ".gguf");
    ASSERT_TRUE(model::write_synthetic_model(so, path).is_ok());
    auto m = model::load_model(path);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    std::shared_ptr<model::Model> mdl(std::move(m).value());
    EngineOptions o;
    o.n_threads = 1;
    o.ctx_size = 128;
    o.block_size = 8;
    o.max_batch_tokens = 12;
    o.prefix_cache = false;
    std::vector<Request> reqs;
    for (int i = 0; i < 5; ++i) reqs.push_back(greedy(prompt(3 + 7 * i, i), 8));
    std::vector<Outcome> alone;
    for (const Request& r : reqs) {
      alone.push_back(run(*std::move(Engine::create(mdl, tokenizer_, o)).value(), {r})[0]);
    }
    auto together = run(*std::move(Engine::create(mdl, tokenizer_, o)).value(), reqs);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(together[i].tokens, alone[i].tokens) << "request " << i;
    }
  }
}

TEST_F(EngineTest, PrefixReuseGivesTheSameTokensAndCountsCachedTokens) {
  const std::vector<int32_t> shared = prompt(40, 7);
  std::vector<Request> reqs;
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> p = shared;
    for (int j = 0; j < 3 + i; ++j) p.push_back(100 + i * 10 + j);
    reqs.push_back(greedy(p, 8));
  }
  EngineOptions o;
  o.block_size = 8;
  o.prefix_cache = false;
  auto e_off = make(o);
  std::vector<Outcome> off;
  for (const Request& r : reqs) off.push_back(run(*e_off, {r})[0]);
  o.prefix_cache = true;
  auto e_on = make(o);
  std::vector<Outcome> on;
  for (const Request& r : reqs) on.push_back(run(*e_on, {r})[0]);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(on[i].tokens, off[i].tokens) << i;
  EXPECT_EQ(on[0].finish.usage.cached_tokens, 0);
  EXPECT_EQ(on[1].finish.usage.cached_tokens, 40);  // 5 full blocks of the shared 40 tokens
  EXPECT_EQ(on[2].finish.usage.cached_tokens, 40);
  const EngineStats s = e_on->stats();
  EXPECT_GE(s.prefix_hits, 10);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_GT(s.kv_blocks_cached, 0);
  EXPECT_EQ(e_off->stats().prefix_hits, 0);
}

// Every registered family through the engine: batching gives each request the tokens it gets
// alone, and prefix reuse the tokens of a run without it (mistral with a window of 6 positions,
// shorter than the shared prefix: the cache keeps every position, so reused blocks stay valid).
TEST_F(EngineTest, EveryFamilyKeepsBatchInvarianceAndPrefixReuse) {
  for (const std::string& arch : model::synth_architectures()) {
    SCOPED_TRACE(arch);
    model::SynthOptions so;
    so.shape = *model::find_synth_shape("tiny");
    so.dtype = kernels::DType::kQ8_0;
    so.arch = arch;
    if (arch == "mistral") so.sliding_window = 6;
    const std::string path = dir_->file("family-" + arch + ".gguf");
    ASSERT_TRUE(model::write_synthetic_model(so, path).is_ok());
    auto m = model::load_model(path);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    std::shared_ptr<model::Model> mdl(std::move(m).value());
    EngineOptions o;
    o.n_threads = 1;
    o.ctx_size = 128;
    o.block_size = 8;
    o.max_batch_tokens = 12;
    o.prefix_cache = false;
    const std::vector<int32_t> shared = prompt(24, 5);
    std::vector<Request> reqs;
    for (int i = 0; i < 3; ++i) {
      std::vector<int32_t> p = shared;
      for (int j = 0; j < 2 + i; ++j) p.push_back(100 + i * 10 + j);
      reqs.push_back(greedy(p, 8));
    }
    std::vector<Outcome> alone;
    for (const Request& r : reqs) {
      alone.push_back(run(*std::move(Engine::create(mdl, tokenizer_, o)).value(), {r})[0]);
    }
    auto together = run(*std::move(Engine::create(mdl, tokenizer_, o)).value(), reqs);
    o.prefix_cache = true;
    auto cached = std::move(Engine::create(mdl, tokenizer_, o)).value();
    std::vector<Outcome> reused;
    for (const Request& r : reqs) reused.push_back(run(*cached, {r})[0]);
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(together[i].tokens, alone[i].tokens) << "request " << i;
      EXPECT_EQ(reused[i].tokens, alone[i].tokens) << "request " << i;
    }
    EXPECT_EQ(reused[2].finish.usage.cached_tokens, 24);
  }
}

TEST_F(EngineTest, PrefixBlocksMovedToANewEngineAreHitAndGiveTheSameTokens) {
  const std::vector<int32_t> p = prompt(45, 5);  // 5 full blocks of 8 before the last token
  EngineOptions o;
  o.block_size = 8;
  auto a = make(o);
  const auto before = run(*a, {greedy(p, 6)});
  std::vector<std::byte> storage;
  auto set = a->export_prefix_cache(int64_t{1} << 30, [&](size_t n) -> Result<std::span<std::byte>> {
    storage.resize(n);
    return std::span<std::byte>(storage);
  });
  ASSERT_TRUE(set.is_ok()) << set.status().to_string();
  // The prompt's 5 blocks and the one its generated tokens filled (45 + 6 - 1 = 50 computed).
  EXPECT_EQ(set->blocks.size(), 6u);
  EXPECT_EQ(storage.size(), set->bytes());
  EXPECT_EQ(set->format, a->kv_block_format());

  auto b = make(o);
  auto taken = b->import_prefix_cache(*set, storage);
  ASSERT_TRUE(taken.is_ok()) << taken.status().to_string();
  EXPECT_EQ(*taken, 6);
  EXPECT_EQ(b->stats().kv_blocks_cached, 6);
  const auto after = run(*b, {greedy(p, 6)});
  EXPECT_EQ(after[0].tokens, before[0].tokens);
  EXPECT_EQ(after[0].finish.usage.cached_tokens, 40);

  // A budget smaller than one block keeps nothing and never asks for storage.
  bool asked = false;
  auto none = a->export_prefix_cache(100, [&](size_t) -> Result<std::span<std::byte>> {
    asked = true;
    return std::span<std::byte>();
  });
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none->blocks.empty());
  EXPECT_FALSE(asked);
}

TEST_F(EngineTest, PrefixBlocksOfAnotherKvFormatAreRefused) {
  EngineOptions o;
  o.block_size = 8;
  auto a = make(o);
  run(*a, {greedy(prompt(20, 1), 2)});
  std::vector<std::byte> storage;
  auto set = a->export_prefix_cache(int64_t{1} << 30, [&](size_t n) -> Result<std::span<std::byte>> {
    storage.resize(n);
    return std::span<std::byte>(storage);
  });
  ASSERT_TRUE(set.is_ok());
  ASSERT_FALSE(set->blocks.empty());
  o.block_size = 16;
  auto other_block = make(o);
  EXPECT_EQ(other_block->import_prefix_cache(*set, storage).status().code(),
            ErrorCode::kInvalidArgument);
  o.block_size = 8;
  o.kv_dtype = kernels::DType::kF32;
  auto other_dtype = make(o);
  EXPECT_EQ(other_dtype->import_prefix_cache(*set, storage).status().code(),
            ErrorCode::kInvalidArgument);
  o.kv_dtype = kernels::DType::kF16;
  auto same = make(o);
  EXPECT_EQ(same->import_prefix_cache(*set, std::span<const std::byte>(storage).first(7))
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
  o.prefix_cache = false;
  auto off = make(o);
  auto taken = off->import_prefix_cache(*set, storage);
  ASSERT_TRUE(taken.is_ok());
  EXPECT_EQ(*taken, 0);
}

TEST_F(EngineTest, AFullyCachedPromptStillRunsItsLastToken) {
  const std::vector<int32_t> p = prompt(32, 3);  // exactly 4 blocks of 8
  EngineOptions o;
  o.block_size = 8;
  auto e = make(o);
  auto first = run(*e, {greedy(p, 6)});
  auto second = run(*e, {greedy(p, 6)});
  EXPECT_EQ(second[0].tokens, first[0].tokens);
  EXPECT_EQ(second[0].finish.usage.cached_tokens, 24);  // the last block holds the last token
}

TEST_F(EngineTest, PreemptionWhenBlocksRunOutKeepsOutputsIdentical) {
  std::vector<Request> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back(greedy(prompt(20, 20 + i), 40));
  EngineOptions o;
  o.block_size = 4;
  o.max_running = 4;
  o.ctx_size = 64;
  o.n_blocks = 24;  // 4 sequences of 60 positions need 60 blocks: preemption must happen
  o.prefix_cache = false;
  std::vector<Outcome> alone;
  for (const Request& r : reqs) alone.push_back(run(*make(o), {r})[0]);
  auto e = make(o);
  auto together = run(*e, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(together[i].tokens, alone[i].tokens) << i;
  EXPECT_GT(e->stats().preemptions, 0);
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
}

TEST_F(EngineTest, CancelFreesBlocksAndReportsCancelled) {
  EngineOptions o;
  o.block_size = 4;
  o.prefix_cache = false;
  auto e = make(o);
  Outcome out;
  auto id = e->submit(greedy(prompt(30, 5), 100), [&](Event&& ev) {
    if (auto* f = std::get_if<FinishEvent>(&ev.body)) {
      out.finish = *f;
      out.finished = true;
    } else {
      out.tokens.push_back(std::get<TokenEvent>(ev.body).token);
    }
  });
  ASSERT_TRUE(id.is_ok());
  for (int i = 0; i < 5; ++i) e->step();
  EXPECT_GT(e->stats().kv_blocks_used, 0);
  e->cancel(*id);
  e->step();
  EXPECT_TRUE(out.finished);
  EXPECT_EQ(out.finish.reason, FinishReason::kCancelled);
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  EXPECT_EQ(e->stats().running, 0);
  e->cancel(*id);  // unknown now: ignored
  e->cancel(12345);
  EXPECT_FALSE(e->step());
}

TEST_F(EngineTest, RefusesBadRequestsWithTheRightCodes) {
  EngineOptions o;
  o.ctx_size = 16;
  o.max_waiting = 2;
  auto e = make(o);
  auto sink = [](Event&&) {};
  EXPECT_EQ(e->submit(greedy({}, 4), sink).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e->submit(greedy({1, 999999}, 4), sink).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e->submit(greedy(prompt(16, 1), 4), sink).status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(e->submit(greedy(prompt(4, 1), 0), sink).status().code(), ErrorCode::kInvalidArgument);
  Request bad = greedy(prompt(4, 1), 4);
  bad.n_logprobs = 21;
  EXPECT_EQ(e->submit(bad, sink).status().code(), ErrorCode::kInvalidArgument);
  bad = greedy(prompt(4, 1), 4);
  bad.sampling.top_p = -1.0f;
  EXPECT_EQ(e->submit(bad, sink).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(e->submit(greedy(prompt(4, 1), 4), sink).is_ok());
  EXPECT_TRUE(e->submit(greedy(prompt(4, 2), 4), sink).is_ok());
  EXPECT_EQ(e->submit(greedy(prompt(4, 3), 4), sink).status().code(),
            ErrorCode::kResourceExhausted);
}

TEST_F(EngineTest, StopsAtContextEnd) {
  EngineOptions o;
  o.ctx_size = 12;
  auto e = make(o);
  auto out = run(*e, {greedy(prompt(8, 1), 100)});
  EXPECT_EQ(out[0].finish.reason, FinishReason::kLength);
  EXPECT_EQ(out[0].tokens.size(), 4u);  // positions 8..11
}

TEST_F(EngineTest, StopStringEndsTheRequestAndIsNotOutput) {
  EngineOptions o;
  auto e = make(o);
  const auto free_run = run(*e, {greedy(prompt(10, 4), 12)});
  const std::string& text = free_run[0].text;
  ASSERT_GE(text.size(), 4u);
  // Stop on a piece of the text the model produces anyway.
  Request r = greedy(prompt(10, 4), 12);
  const std::string stop = text.substr(text.size() / 2, 2);
  r.stop = {stop};
  const auto stopped = run(*e, {r});
  EXPECT_EQ(stopped[0].finish.reason, FinishReason::kStop);
  EXPECT_EQ(stopped[0].text, text.substr(0, text.find(stop)));
}

TEST_F(EngineTest, LogprobsDescribeTheModelDistribution) {
  EngineOptions o;
  auto e = make(o);
  Request r = greedy(prompt(10, 2), 5);
  r.n_logprobs = 5;
  const auto out = run(*e, {r});
  ASSERT_EQ(out[0].events.size(), 5u);
  for (const TokenEvent& ev : out[0].events) {
    ASSERT_EQ(ev.top.size(), 5u);
    EXPECT_EQ(ev.top[0].token, ev.token);  // greedy picks the most likely
    EXPECT_FLOAT_EQ(ev.top[0].logprob, ev.logprob);
    double mass = 0.0;
    for (size_t i = 0; i < ev.top.size(); ++i) {
      EXPECT_LE(ev.top[i].logprob, 0.0f);
      if (i > 0) {
        EXPECT_LE(ev.top[i].logprob, ev.top[i - 1].logprob);
      }
      mass += std::exp(ev.top[i].logprob);
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
    EXPECT_EQ(ev.piece, tokenizer_->token_to_piece(ev.token));
  }
}

TEST_F(EngineTest, ThreadedEngineServesConcurrentSubmittersAndDrains) {
  EngineOptions o;
  o.max_running = 3;
  auto e = make(o);
  e->start();
  constexpr int kN = 8;
  std::vector<std::promise<Outcome>> done(kN);
  std::vector<Outcome> partial(kN);
  for (int i = 0; i < kN; ++i) {
    auto id = e->submit(greedy(prompt(6 + i, i), 6), [&, i](Event&& ev) {
      if (auto* t = std::get_if<TokenEvent>(&ev.body)) {
        partial[static_cast<size_t>(i)].tokens.push_back(t->token);
      } else {
        partial[static_cast<size_t>(i)].finish = std::get<FinishEvent>(ev.body);
        done[static_cast<size_t>(i)].set_value(partial[static_cast<size_t>(i)]);
      }
    });
    ASSERT_TRUE(id.is_ok());
  }
  for (int i = 0; i < kN; ++i) {
    Outcome o2 = done[static_cast<size_t>(i)].get_future().get();
    EXPECT_EQ(o2.tokens.size(), 6u);
    EXPECT_EQ(o2.finish.reason, FinishReason::kLength);
    EXPECT_GE(o2.finish.timings.total, o2.finish.timings.first_token);
  }
  EXPECT_TRUE(e->drain(std::chrono::milliseconds(5000)));
  EXPECT_EQ(e->submit(greedy(prompt(4, 1), 2), [](Event&&) {}).status().code(),
            ErrorCode::kUnavailable);
}

TEST_F(EngineTest, StopCancelsWhatIsLeft) {
  EngineOptions o;
  auto e = make(o);
  FinishReason reason = FinishReason::kLength;
  ASSERT_TRUE(e->submit(greedy(prompt(6, 1), 50), [&](Event&& ev) {
                 if (auto* f = std::get_if<FinishEvent>(&ev.body)) reason = f->reason;
               }).is_ok());
  e->step();
  e->stop();
  EXPECT_EQ(reason, FinishReason::kCancelled);
}

}  // namespace engine_test
}  // namespace tessera::engine

namespace tessera::engine {
namespace engine_test {

// Engines sharing one DeviceScheduler (as a fleet's models do) run on its pool, one iteration at
// a time, and give the same tokens as an engine with its own pool.
TEST_F(EngineTest, EnginesSharingADeviceGiveTheTokensEachGivesAlone) {
  std::vector<Request> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back(greedy(prompt(7 + 5 * i, i), 8));
  EngineOptions own;
  own.max_running = 2;
  std::vector<Outcome> alone;
  for (const Request& r : reqs) alone.push_back(run(*make(own), {r})[0]);

  DeviceSchedulerOptions so;
  so.n_threads = 2;
  auto device = std::make_shared<DeviceScheduler>(so);
  std::vector<std::unique_ptr<Engine>> engines;
  for (int k = 0; k < 2; ++k) {
    EngineOptions o = own;
    o.device = device;
    o.device_client = "model-" + std::to_string(k);
    o.device_weight = k + 1.0;
    engines.push_back(make(o));
    ASSERT_NE(engines.back(), nullptr);
    EXPECT_EQ(engines.back()->options().n_threads, 2);
    engines.back()->start();
  }
  std::vector<std::promise<std::vector<int32_t>>> done(reqs.size());
  std::vector<std::vector<int32_t>> tokens(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto id = engines[i % 2]->submit(reqs[i], [&, i](Event&& ev) {
      if (auto* t = std::get_if<TokenEvent>(&ev.body)) {
        tokens[i].push_back(t->token);
      } else {
        done[i].set_value(tokens[i]);
      }
    });
    ASSERT_TRUE(id.is_ok());
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(done[i].get_future().get(), alone[i].tokens) << "request " << i;
  }
  for (auto& e : engines) EXPECT_TRUE(e->drain(std::chrono::milliseconds(5000)));
  const auto st = device->stats();
  ASSERT_EQ(st.size(), 2u);
  for (const auto& c : st) {
    EXPECT_GE(c.grants, 8) << c.name;  // at least one iteration per generated token
    EXPECT_GT(c.busy_ns, 0) << c.name;
  }
  engines.clear();  // clients deregistered; the stats stay
  EXPECT_EQ(device->stats().size(), 2u);
}

}  // namespace engine_test
}  // namespace tessera::engine

namespace tessera::engine {
namespace engine_test {

// A model's old engine may be destroyed after its replacement registered under the same name (a
// resume while someone still holds the stopped engine): stop() leaves the device, so the late
// destructor must not take the new engine's registration with it.
TEST_F(EngineTest, AStoppedEngineLeavesTheDeviceBeforeItIsDestroyed) {
  DeviceSchedulerOptions so;
  so.n_threads = 1;
  auto device = std::make_shared<DeviceScheduler>(so);
  EngineOptions o;
  o.device = device;
  o.device_client = "m";
  auto old_engine = make(o);
  ASSERT_NE(old_engine, nullptr);
  old_engine->stop();
  auto new_engine = make(o);  // same name: would abort if "m" were still registered
  ASSERT_NE(new_engine, nullptr);
  old_engine.reset();
  auto got = run(*new_engine, {greedy(prompt(5, 1), 3)});  // still registered: acquire works
  EXPECT_EQ(got[0].tokens.size(), 3u);
  EXPECT_EQ(device->stats().size(), 1u);
}

}  // namespace engine_test
}  // namespace tessera::engine
