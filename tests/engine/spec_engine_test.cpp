// Speculative decoding inside the engine: greedy outputs are token for token those of decoding
// without speculation, for both drafters, at batch sizes 1, 4 and 16 with requests joining and
// leaving mid-stream; the KV pool and prefix cache end as they do without speculation (only
// verified tokens published, no block left referenced), through cancellation and preemption;
// sampled outputs follow the same distribution (two-sample chi-square on stories260K).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "tessera/engine/block_allocator.h"
#include "tessera/engine/engine.h"
#include "tessera/engine/model_drafter.h"
#include "tessera/model/architecture.h"
#include "tessera/model/layer_skip.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::engine {
namespace spec_engine_test {

struct Out {
  std::vector<int32_t> tokens;
  bool finished = false;
  FinishReason reason = FinishReason::kLength;
};

std::shared_ptr<model::Model> load(const std::string& path) {
  auto m = model::load_model(path);
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  return m.is_ok() ? std::shared_ptr<model::Model>(std::move(m).value()) : nullptr;
}

class SpecEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kQ8_0;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("target.gguf")).is_ok());
    o.dtype = kernels::DType::kQ4_0;  // the same weights at a lower precision
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("draft-q4_0.gguf")).is_ok());
    o.seed = 99;  // a different model with the same vocabulary: mostly rejected drafts
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("draft-other.gguf")).is_ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    target_ = load(dir_->file("target.gguf"));
    ASSERT_NE(target_, nullptr);
    auto t = model::make_tokenizer(target_->file().metadata);
    ASSERT_TRUE(t.is_ok());
    tokenizer_ = std::shared_ptr<const model::Tokenizer>(std::move(t).value());
  }

  EngineOptions options(SpecMethod m, const std::string& draft_file = "") {
    EngineOptions o;
    o.n_threads = 1;
    o.ctx_size = 160;
    o.block_size = 4;
    o.max_running = 16;
    o.max_batch_tokens = 48;
    o.spec.method = m;
    o.spec.max_draft = 4;
    o.spec.max_rows = 1000;
    o.spec.ngram_min = 1;
    if (draft_file == "skip:1") {  // self-speculation: the target without its second layer
      o.spec.draft_model = model::LayerSkipModel::create(target_, {1}).value();
      o.spec.draft_tokenizer = tokenizer_;
    } else if (!draft_file.empty()) {
      o.spec.draft_model = load(dir_->file(draft_file));
      o.spec.draft_tokenizer = tokenizer_;
    }
    return o;
  }

  static Request greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
    Request r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0.0f;
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
  }

  // A prompt with repeats in it, so that n-gram lookup has something to find.
  static std::vector<int32_t> prompt(int n, int seed) {
    std::vector<int32_t> p = {1};
    for (int i = 1; i < n; ++i) p.push_back(3 + (seed * 37 + (i % 9) * 11 + (i / 18)) % 300);
    return p;
  }

  // Submits `reqs` a group at a time (`join_every` steps apart), steps until all are done;
  // cancels request `cancel_index` once it has `cancel_after` tokens.
  static std::vector<Out> run(Engine& e, const std::vector<Request>& reqs, int group,
                              int join_every, int cancel_index = -1, int cancel_after = 0) {
    std::vector<Out> out(reqs.size());
    std::vector<RequestId> ids(reqs.size());
    size_t next = 0;
    const auto submit_group = [&] {
      for (int g = 0; g < group && next < reqs.size(); ++g, ++next) {
        const size_t i = next;
        auto id = e.submit(reqs[i], [&out, i](Event&& ev) {
          if (auto* t = std::get_if<TokenEvent>(&ev.body)) {
            out[i].tokens.push_back(t->token);
          } else {
            out[i].finished = true;
            out[i].reason = std::get<FinishEvent>(ev.body).reason;
          }
        });
        ASSERT_TRUE(id.is_ok()) << id.status().to_string();
        ids[i] = *id;
      }
    };
    submit_group();
    bool cancelled = false;
    for (int step = 0; step < 100000; ++step) {
      if (step % join_every == join_every - 1) submit_group();
      if (cancel_index >= 0 && !cancelled &&
          static_cast<int>(out[static_cast<size_t>(cancel_index)].tokens.size()) >= cancel_after) {
        e.cancel(ids[static_cast<size_t>(cancel_index)]);
        cancelled = true;
      }
      if (!e.step() && next >= reqs.size()) break;
    }
    for (const Out& o : out) EXPECT_TRUE(o.finished);
    return out;
  }

  // The prefix cache's block hashes (the engine is not running).
  static std::set<uint64_t> cached_hashes(Engine& e) {
    std::vector<std::byte> store;
    auto set = e.export_prefix_cache(int64_t{1} << 40, [&](size_t n) -> Result<std::span<std::byte>> {
      store.resize(n);
      return std::span<std::byte>(store);
    });
    EXPECT_TRUE(set.is_ok());
    std::set<uint64_t> h;
    for (const PrefixBlock& b : set->blocks) h.insert(b.hash);
    return h;
  }

  // What a prefix cache holds when every sequence published exactly its verified tokens: the
  // full blocks of prompt + output, less the last token (never run through the model).
  static std::set<uint64_t> expected_hashes(const std::vector<Request>& reqs,
                                            const std::vector<Out>& outs, int32_t block_size) {
    std::set<uint64_t> h;
    for (size_t i = 0; i < reqs.size(); ++i) {
      std::vector<int32_t> all = reqs[i].prompt;
      all.insert(all.end(), outs[i].tokens.begin(), outs[i].tokens.end());
      const size_t n_full = (all.size() - 1) / static_cast<size_t>(block_size);
      uint64_t parent = 0;
      for (size_t b = 0; b < n_full; ++b) {
        parent = chain_block_hash(parent, std::span<const int32_t>(all).subspan(b * block_size, block_size), -1);
        h.insert(parent);
      }
    }
    return h;
  }

  static testing::TempDir* dir_;
  std::shared_ptr<model::Model> target_;
  std::shared_ptr<const model::Tokenizer> tokenizer_;
};
testing::TempDir* SpecEngineTest::dir_ = nullptr;

TEST_F(SpecEngineTest, GreedyIsIdenticalWithEachDrafterAtBatch1_4_16) {
  for (int batch : {1, 4, 16}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    std::vector<Request> reqs;
    for (int i = 0; i < batch + batch / 2; ++i) {
      reqs.push_back(greedy(prompt(6 + 5 * (i % 7), i), 12 + 3 * (i % 5)));
    }
    // Requests join in groups every 3 steps and leave at different lengths.
    const int group = std::max(1, batch / 2);
    auto plain = Engine::create(target_, tokenizer_, options(SpecMethod::kNone)).value();
    const std::vector<Out> want = run(*plain, reqs, group, 3);
    const std::set<uint64_t> want_cache = cached_hashes(*plain);
    EXPECT_EQ(want_cache, expected_hashes(reqs, want, 4));
    for (const auto& [method, file] : std::vector<std::pair<SpecMethod, std::string>>{
             {SpecMethod::kNgram, ""},
             {SpecMethod::kDraftModel, "draft-q4_0.gguf"},
             {SpecMethod::kDraftModel, "draft-other.gguf"},
             {SpecMethod::kDraftModel, "skip:1"}}) {
      SCOPED_TRACE(std::string(spec_method_name(method)) + " " + file);
      auto e = Engine::create(target_, tokenizer_, options(method, file)).value();
      const std::vector<Out> got = run(*e, reqs, group, 3);
      for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
      const EngineStats s = e->stats();
      EXPECT_GT(s.spec_draft_tokens, 0);
      if (file != "draft-other.gguf" && file != "skip:1") {
        EXPECT_GT(s.spec_accepted_tokens, 0);
      }
      EXPECT_EQ(s.kv_blocks_used, 0);
      EXPECT_EQ(cached_hashes(*e), want_cache);
      int64_t verifications = 0;
      for (int64_t c : s.spec_accepted_histogram) verifications += c;
      EXPECT_GT(verifications, 0);
      EXPECT_LE(s.spec_accepted_tokens, s.spec_draft_tokens);
    }
  }
}

TEST_F(SpecEngineTest, CancellationMidStreamLeavesOnlyVerifiedBlocks) {
  std::vector<Request> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(greedy(prompt(9 + 4 * i, i), 30));
  for (SpecMethod m : {SpecMethod::kNone, SpecMethod::kNgram, SpecMethod::kDraftModel}) {
    SCOPED_TRACE(std::string(spec_method_name(m)));
    auto e = Engine::create(target_, tokenizer_,
                            options(m, m == SpecMethod::kDraftModel ? "draft-q4_0.gguf" : ""))
                 .value();
    const std::vector<Out> got = run(*e, reqs, 3, 2, /*cancel_index=*/1, /*cancel_after=*/7);
    EXPECT_EQ(got[1].reason, FinishReason::kCancelled);
    EXPECT_GE(got[1].tokens.size(), 7u);
    EXPECT_EQ(e->stats().kv_blocks_used, 0);
    EXPECT_EQ(cached_hashes(*e), expected_hashes(reqs, got, 4));
  }
}

TEST_F(SpecEngineTest, PreemptionUnderASmallPoolKeepsOutputsAndCache) {
  std::vector<Request> reqs;
  for (int i = 0; i < 8; ++i) reqs.push_back(greedy(prompt(20 + 3 * i, i), 40));
  std::vector<Out> want;
  for (SpecMethod m : {SpecMethod::kNone, SpecMethod::kNgram, SpecMethod::kDraftModel}) {
    SCOPED_TRACE(std::string(spec_method_name(m)));
    EngineOptions o = options(m, m == SpecMethod::kDraftModel ? "draft-q4_0.gguf" : "");
    o.max_running = 8;
    o.n_blocks = 48;  // 192 positions for 8 sequences of ~70: preemption is certain
    auto e = Engine::create(target_, tokenizer_, o).value();
    const std::vector<Out> got = run(*e, reqs, 8, 1000);
    EXPECT_GT(e->stats().preemptions, 0);
    EXPECT_EQ(e->stats().kv_blocks_used, 0);
    if (want.empty()) {
      want = got;
    } else {
      for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
    }
    // Evictions may have dropped some, but whatever is cached is a verified block.
    const std::set<uint64_t> all = expected_hashes(reqs, got, 4);
    for (uint64_t h : cached_hashes(*e)) EXPECT_TRUE(all.count(h)) << h;
  }
}

TEST_F(SpecEngineTest, PerRequestSwitchOverridesTheServer) {
  auto e = Engine::create(target_, tokenizer_, options(SpecMethod::kNgram)).value();
  Request off = greedy(prompt(30, 3), 20);
  off.speculative = SpecMode::kOff;
  run(*e, {off}, 1, 1);
  EXPECT_EQ(e->stats().spec_draft_tokens, 0);
  auto plain = Engine::create(target_, tokenizer_, options(SpecMethod::kNone)).value();
  Request on = greedy(prompt(30, 3), 20);
  on.speculative = SpecMode::kOn;  // no server drafter: n-gram lookup
  run(*plain, {on}, 1, 1);
  EXPECT_GT(plain->stats().spec_draft_tokens, 0);
}

TEST_F(SpecEngineTest, OptionsAreChecked) {
  EngineOptions o = options(SpecMethod::kDraftModel);
  EXPECT_EQ(Engine::create(target_, tokenizer_, o).status().code(), ErrorCode::kInvalidArgument);
  o = options(SpecMethod::kNgram);
  o.spec.max_draft = 0;
  EXPECT_EQ(Engine::create(target_, tokenizer_, o).status().code(), ErrorCode::kInvalidArgument);
  o.spec.max_draft = 17;
  EXPECT_EQ(Engine::create(target_, tokenizer_, o).status().code(), ErrorCode::kInvalidArgument);
}

// stories260K (trained) as the target, drafted by n-gram lookup and by itself; aidreams260K
// (another vocabulary) is refused as a draft by name.
class Stories : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto m = testing::shared_file("models/stories260K.bin");
    const auto t = testing::shared_file("models/stories260K-tok512.bin");
    if (m.empty() || t.empty()) {
      GTEST_SKIP() << "shared data 'models/stories260K.bin' not found under "
                   << testing::shared_dir() << " (set TESSERA_SHARED_DIR)";
    }
    model_ = load(m.string());
    ASSERT_NE(model_, nullptr);
    auto tok = model::load_llama2c_tokenizer(t.string(), static_cast<int32_t>(model_->config().n_vocab));
    ASSERT_TRUE(tok.is_ok());
    tokenizer_ = std::shared_ptr<const model::Tokenizer>(std::move(tok).value());
  }
  EngineOptions options(SpecMethod m) {
    EngineOptions o;
    o.n_threads = 1;
    o.ctx_size = 256;
    o.max_running = 16;
    o.spec.method = m;
    o.spec.max_rows = 1000;
    if (m == SpecMethod::kDraftModel) {
      o.spec.draft_model = model_;  // drafting for itself: every draft must be accepted
      o.spec.draft_tokenizer = tokenizer_;
    }
    return o;
  }
  std::shared_ptr<model::Model> model_;
  std::shared_ptr<const model::Tokenizer> tokenizer_;
};

TEST_F(Stories, GreedyIsIdenticalAndSelfDraftingAcceptsEverything) {
  const std::vector<std::string> texts = {"Once upon a time", "Lily and Tom went to the park",
                                          "The little dog", "One day, a big bird"};
  std::vector<std::vector<int32_t>> want;
  for (SpecMethod m : {SpecMethod::kNone, SpecMethod::kNgram, SpecMethod::kDraftModel}) {
    SCOPED_TRACE(std::string(spec_method_name(m)));
    auto e = Engine::create(model_, tokenizer_, options(m)).value();
    std::vector<std::vector<int32_t>> got(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      Request r;
      r.prompt = tokenizer_->encode(texts[i], true, false);
      r.sampling.temperature = 0.0f;
      r.max_tokens = 120;
      ASSERT_TRUE(e->submit(r, [&got, i](Event&& ev) {
                     if (auto* t = std::get_if<TokenEvent>(&ev.body)) got[i].push_back(t->token);
                   }).is_ok());
    }
    while (e->step()) {
    }
    if (want.empty()) {
      want = got;
      continue;
    }
    for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(got[i], want[i]) << texts[i];
    const EngineStats s = e->stats();
    EXPECT_GT(s.spec_accepted_tokens, 0);
    if (m == SpecMethod::kDraftModel) {
      EXPECT_EQ(s.spec_accepted_tokens, s.spec_draft_tokens);
    }
  }
}

// Self-speculation: stories260K without its last layer drafts for the whole model.
TEST_F(Stories, SkippingALayerDraftsForTheFullModelLosslessly) {
  auto skip = model::LayerSkipModel::create(model_, {4});
  ASSERT_TRUE(skip.is_ok()) << skip.status().to_string();
  std::vector<std::vector<int32_t>> got[2];
  int64_t accepted = 0;
  for (int mode = 0; mode < 2; ++mode) {
    EngineOptions o = options(mode ? SpecMethod::kDraftModel : SpecMethod::kNone);
    if (mode) o.spec.draft_model = *skip;
    auto e = Engine::create(model_, tokenizer_, o).value();
    got[mode].resize(3);
    for (size_t i = 0; i < 3; ++i) {
      Request r;
      r.prompt = tokenizer_->encode(i == 0 ? "Once upon a time" : i == 1 ? "Tom had a red" : "The sun", true, false);
      r.sampling.temperature = 0.0f;
      r.max_tokens = 100;
      ASSERT_TRUE(e->submit(r, [&got, mode, i](Event&& ev) {
                     if (auto* t = std::get_if<TokenEvent>(&ev.body)) got[mode][i].push_back(t->token);
                   }).is_ok());
    }
    while (e->step()) {
    }
    if (mode) accepted = e->stats().spec_accepted_tokens;
  }
  EXPECT_EQ(got[1], got[0]);
  EXPECT_GT(accepted, 0);
}

TEST_F(Stories, ADraftWithAnotherVocabularyIsRefused) {
  const auto m = testing::shared_file("models/aidreams260K.bin");
  const auto t = testing::shared_file("models/aidreams260K-tok512.bin");
  if (m.empty() || t.empty()) GTEST_SKIP() << "shared aidreams260K not found";
  auto other = load(m.string());
  auto tok = model::load_llama2c_tokenizer(t.string(), static_cast<int32_t>(other->config().n_vocab));
  ASSERT_TRUE(tok.is_ok());
  EngineOptions o = options(SpecMethod::kDraftModel);
  o.spec.draft_model = other;
  o.spec.draft_tokenizer = std::shared_ptr<const model::Tokenizer>(std::move(tok).value());
  const auto e = Engine::create(model_, tokenizer_, o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(e.status().to_string().find("token"), std::string::npos) << e.status().to_string();
}

// Sampling with speculation draws from the target's distribution: the second and third tokens
// (the first ones that pass through verification) of many seeded runs, with and without
// speculation, compared by a two-sample chi-square. top-k, top-p and a repetition penalty on.
TEST_F(Stories, SampledTokensFollowTheSameDistributionWithAndWithoutSpeculation) {
  const std::vector<int32_t> p = tokenizer_->encode("Lily and Tom. Lily and Tom. Lily and", true, false);
  const int n = 2400;
  std::map<std::pair<int32_t, int32_t>, int64_t> counts[2];
  int64_t drafted = 0;
  for (int mode = 0; mode < 2; ++mode) {
    auto e = Engine::create(model_, tokenizer_, options(mode ? SpecMethod::kNgram : SpecMethod::kNone)).value();
    for (int base = 0; base < n; base += 16) {
      std::vector<std::vector<int32_t>> got(16);
      for (int j = 0; j < 16; ++j) {
        Request r;
        r.prompt = p;
        r.sampling.temperature = 1.0f;
        r.sampling.top_k = 40;
        r.sampling.top_p = 0.9f;
        r.sampling.min_p = 0.0f;
        r.sampling.repetition_penalty = 1.1f;
        r.sampling.seed = static_cast<uint64_t>(base + j + 1 + mode * 1000003);
        r.max_tokens = 3;
        r.ignore_eos = true;
        ASSERT_TRUE(e->submit(r, [&got, j](Event&& ev) {
                       if (auto* t = std::get_if<TokenEvent>(&ev.body)) got[static_cast<size_t>(j)].push_back(t->token);
                     }).is_ok());
      }
      while (e->step()) {
      }
      for (const auto& g : got) ++counts[mode][{g[1], g[2]}];
    }
    if (mode == 1) drafted = e->stats().spec_draft_tokens;
  }
  EXPECT_GT(drafted, n / 4) << "the prompt should give n-gram drafts";
  // Two-sample chi-square over cells with at least 10 observations in all; the rest pooled.
  double stat = 0.0;
  int cells = 0;
  int64_t pooled[2] = {0, 0};
  std::set<std::pair<int32_t, int32_t>> keys;
  for (const auto& c : counts) {
    for (const auto& [k, v] : c) keys.insert(k);
  }
  for (const auto& k : keys) {
    const int64_t a = counts[0].count(k) ? counts[0].at(k) : 0;
    const int64_t b = counts[1].count(k) ? counts[1].at(k) : 0;
    if (a + b < 10) {
      pooled[0] += a;
      pooled[1] += b;
      continue;
    }
    stat += static_cast<double>((a - b) * (a - b)) / static_cast<double>(a + b);
    ++cells;
  }
  if (pooled[0] + pooled[1] > 0) {
    stat += static_cast<double>((pooled[0] - pooled[1]) * (pooled[0] - pooled[1])) /
            static_cast<double>(pooled[0] + pooled[1]);
    ++cells;
  }
  const int df = cells - 1;
  ASSERT_GE(df, 5);
  const double t = 1.0 - 2.0 / (9.0 * df) + 3.0902 * std::sqrt(2.0 / (9.0 * df));
  EXPECT_LT(stat, df * t * t * t) << "df " << df;  // the 0.1% critical value
}

}  // namespace spec_engine_test
}  // namespace tessera::engine
