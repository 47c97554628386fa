// Perplexity by llama.cpp's convention against a plain reference written here: the same chunks
// decoded one token at a time (a different path through the model: single-row steps), the
// second half of each scored from a log-softmax in double precision. Also the chunk arithmetic,
// the BOS substitution, and errors.
#include "tessera/bench/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include "tessera/model/architecture.h"
#include "tessera/model/kv_cache.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::bench {
namespace perplexity_test {

struct Loaded {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<model::Tokenizer> tokenizer;
};

Loaded tiny_model(const testing::TempDir& dir) {
  model::SynthOptions o;
  o.shape = *model::find_synth_shape("tiny");
  o.seed = 11;
  EXPECT_TRUE(model::write_synthetic_model(o, dir.file("m.gguf")).is_ok());
  Loaded l;
  l.model = model::load_model(dir.file("m.gguf")).value();
  l.tokenizer = model::make_tokenizer(l.model->file().metadata).value();
  return l;
}

std::string some_text() {
  std::string t;
  for (int i = 0; i < 60; ++i) {
    t += "the cat sat on the mat and then it ran to the big red house number " +
         std::to_string(i) + ". ";
  }
  return t;
}

TEST(Perplexity, MatchesAOneTokenAtATimeReference) {
  testing::TempDir dir;
  Loaded l = tiny_model(dir);
  const std::string text = some_text();
  PerplexityOptions o;
  o.ctx = 64;
  o.batch = 24;  // chunks take several steps
  o.max_chunks = 3;
  int64_t progress_calls = 0;
  o.progress = [&](int64_t c, int64_t n, double ppl) {
    EXPECT_EQ(c, progress_calls++);
    EXPECT_EQ(n, 3);
    EXPECT_GT(ppl, 1.0);
  };
  auto r = perplexity(*l.model, *l.tokenizer, text, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(progress_calls, 3);
  EXPECT_EQ(r->n_chunks, 3);
  EXPECT_EQ(r->n_scored, 3 * (64 - 1 - 32));

  // The reference: each chunk decoded a token at a time, BOS first, positions 32..62 scored.
  const std::vector<int32_t> toks = l.tokenizer->encode(text, true, false);
  ASSERT_EQ(toks.front(), l.tokenizer->bos_id());
  const int64_t V = l.model->config().n_vocab;
  double nll = 0.0;
  int64_t n = 0;
  for (int64_t c = 0; c < 3; ++c) {
    auto kv = model::KvCache::create(l.model->config(), 1, 64, kernels::DType::kF32).value();
    std::vector<float> logits(static_cast<size_t>(V));
    for (int32_t j = 0; j < 63; ++j) {
      model::Batch b;
      const int32_t tok = j == 0 ? l.tokenizer->bos_id() : toks[static_cast<size_t>(c * 64 + j)];
      b.add(tok, j, 0, true);
      ASSERT_TRUE(l.model->forward(b, kv, logits, nullptr).is_ok());
      if (j < 32) continue;
      double m = -1e300, z = 0.0;
      for (float v : logits) m = std::max(m, static_cast<double>(v));
      for (float v : logits) z += std::exp(static_cast<double>(v) - m);
      const int32_t next = toks[static_cast<size_t>(c * 64 + j + 1)];
      nll += -(static_cast<double>(logits[static_cast<size_t>(next)]) - m - std::log(z));
      ++n;
    }
  }
  ASSERT_EQ(n, r->n_scored);
  EXPECT_NEAR(r->mean_nll, nll / static_cast<double>(n), 1e-4);
  EXPECT_NEAR(r->ppl, std::exp(nll / static_cast<double>(n)), 1e-3 * r->ppl);
  EXPECT_GT(r->ppl_stderr, 0.0);
  EXPECT_LT(r->ppl_stderr, r->ppl);
  ASSERT_EQ(r->running_ppl.size(), 3u);
  EXPECT_DOUBLE_EQ(r->running_ppl.back(), r->ppl);
}

TEST(Perplexity, WholeChunksOnlyAndClearErrors) {
  testing::TempDir dir;
  Loaded l = tiny_model(dir);
  const std::string text = some_text();
  const auto n_tokens = static_cast<int64_t>(l.tokenizer->encode(text, true, false).size());
  PerplexityOptions o;
  o.ctx = 100;
  auto r = perplexity(*l.model, *l.tokenizer, text, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->n_tokens, n_tokens);
  EXPECT_EQ(r->n_chunks, n_tokens / 100);  // the partial last chunk is dropped
  o.ctx = static_cast<int32_t>(n_tokens + 1);
  auto short_text = perplexity(*l.model, *l.tokenizer, text, o);
  ASSERT_FALSE(short_text.is_ok());
  EXPECT_NE(short_text.status().message().find("fewer than one chunk"), std::string::npos);
  o.ctx = 4;
  EXPECT_EQ(perplexity(*l.model, *l.tokenizer, text, o).status().code(),
            ErrorCode::kInvalidArgument);
}

// KL(base || model): zero against itself; small, positive and below a coarser quantization's
// for a Q8_0 copy; its PPLs are perplexity()'s.
TEST(Perplexity, KlDivergenceOrdersQuantizations) {
  testing::TempDir dir;
  Loaded l = tiny_model(dir);
  model::SynthOptions o8;
  o8.shape = *model::find_synth_shape("tiny");
  o8.seed = 11;
  o8.dtype = kernels::DType::kQ8_0;
  ASSERT_TRUE(model::write_synthetic_model(o8, dir.file("q8.gguf")).is_ok());
  o8.dtype = kernels::DType::kQ4_0;
  ASSERT_TRUE(model::write_synthetic_model(o8, dir.file("q4.gguf")).is_ok());
  auto q8 = model::load_model(dir.file("q8.gguf")).value();
  auto q4 = model::load_model(dir.file("q4.gguf")).value();
  const std::string text = some_text();
  PerplexityOptions o;
  o.ctx = 64;
  o.max_chunks = 2;
  auto self = kl_divergence(*l.model, *l.model, *l.tokenizer, text, o);
  ASSERT_TRUE(self.is_ok()) << self.status().to_string();
  EXPECT_NEAR(self->mean_kl, 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(self->top1_agreement, 1.0);
  EXPECT_EQ(self->n_scored, 2 * (64 - 1 - 32));
  auto k8 = kl_divergence(*l.model, *q8, *l.tokenizer, text, o);
  auto k4 = kl_divergence(*l.model, *q4, *l.tokenizer, text, o);
  ASSERT_TRUE(k8.is_ok() && k4.is_ok());
  EXPECT_GT(k8->mean_kl, 0.0);
  EXPECT_LT(k8->mean_kl, k4->mean_kl);
  EXPECT_LE(k8->median_kl, k8->p99_kl);
  EXPECT_LE(k8->p99_kl, k8->max_kl);
  auto p = perplexity(*q8, *l.tokenizer, text, o);
  ASSERT_TRUE(p.is_ok());
  EXPECT_NEAR(k8->ppl, p->ppl, 1e-6 * p->ppl);
  EXPECT_NEAR(k8->base_ppl, self->ppl, 1e-9 * self->ppl);
}

// Base log-probabilities saved once and compared later give the in-process KL (up to the file's
// f16 rounding); a file from another text, a truncated or foreign file are refused by name.
TEST(Perplexity, KlFromSavedLogitsMatchesTheInProcessOne) {
  testing::TempDir dir;
  Loaded l = tiny_model(dir);
  model::SynthOptions o8;
  o8.shape = *model::find_synth_shape("tiny");
  o8.seed = 11;
  o8.dtype = kernels::DType::kQ4_0;
  ASSERT_TRUE(model::write_synthetic_model(o8, dir.file("q4.gguf")).is_ok());
  auto q4 = model::load_model(dir.file("q4.gguf")).value();
  const std::string text = some_text();
  PerplexityOptions o;
  o.ctx = 64;
  o.max_chunks = 2;
  auto w = SavedLogitsWriter::create(dir.file("base.lg"));
  ASSERT_TRUE(w.is_ok());
  PerplexityOptions save = o;
  save.on_scored = [&](std::span<const float> lp, int32_t next) { w->add(lp, next); };
  auto base = perplexity(*l.model, *l.tokenizer, text, save);
  ASSERT_TRUE(base.is_ok());
  ASSERT_TRUE(w->finish(static_cast<int32_t>(l.model->config().n_vocab), base->ctx,
                        base->n_chunks, base->tokens_hash)
                  .is_ok());
  auto direct = kl_divergence(*l.model, *q4, *l.tokenizer, text, o);
  PerplexityOptions later;  // ctx and chunks come from the file
  auto saved = kl_from_saved(*q4, *l.tokenizer, text, dir.file("base.lg"), later);
  ASSERT_TRUE(direct.is_ok() && saved.is_ok()) << saved.status().to_string();
  EXPECT_EQ(saved->n_scored, direct->n_scored);
  EXPECT_NEAR(saved->mean_kl, direct->mean_kl, 0.01 * direct->mean_kl + 1e-4);
  EXPECT_NEAR(saved->ppl, direct->ppl, 1e-6 * direct->ppl);
  EXPECT_NEAR(saved->base_ppl, direct->base_ppl, 0.01 * direct->base_ppl);
  EXPECT_NEAR(saved->top1_agreement, direct->top1_agreement, 0.05);

  auto other = kl_from_saved(*q4, *l.tokenizer, "a different text " + text, dir.file("base.lg"), later);
  ASSERT_FALSE(other.is_ok());
  EXPECT_NE(other.status().message().find("another text"), std::string::npos);
  {
    std::ifstream in(dir.file("base.lg"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(dir.file("cut.lg"), std::ios::binary) << bytes.substr(0, bytes.size() - 3);
    std::ofstream(dir.file("foreign.lg"), std::ios::binary) << "GGUF" << bytes.substr(4);
  }
  EXPECT_EQ(kl_from_saved(*q4, *l.tokenizer, text, dir.file("cut.lg"), later).status().code(),
            ErrorCode::kCorruptData);
  EXPECT_EQ(kl_from_saved(*q4, *l.tokenizer, text, dir.file("foreign.lg"), later).status().code(),
            ErrorCode::kCorruptData);
  EXPECT_EQ(kl_from_saved(*q4, *l.tokenizer, text, dir.file("none.lg"), later).status().code(),
            ErrorCode::kNotFound);
}

TEST(Perplexity, LogSoftmaxSumsToOne) {
  const std::vector<float> logits = {1000.0f, 999.0f, -5.0f, 0.0f};
  std::vector<float> lp(logits.size());
  log_softmax(logits, lp);
  double sum = 0.0;
  for (float v : lp) sum += std::exp(static_cast<double>(v));
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_NEAR(lp[0] - lp[1], 1.0f, 1e-4);
}

}  // namespace perplexity_test
}  // namespace tessera::bench
