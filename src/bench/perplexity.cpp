#include "tessera/bench/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "tessera/model/kv_cache.h"

namespace tessera::bench {

void log_softmax(std::span<const float> logits, std::span<float> out) {
  float max = -INFINITY;
  for (float v : logits) max = std::max(max, v);
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const double log_z = max + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) {
    out[i] = static_cast<float>(static_cast<double>(logits[i]) - log_z);
  }
}

namespace {

// Evaluates chunk [start, start + ctx) of `tokens` from position 0 (BOS first when `bos` >= 0)
// and calls score(log_probs, next_token) for positions ctx/2 .. ctx-2 in order.
Status score_chunk(model::Model& model, model::KvCache& kv, const std::vector<int32_t>& tokens,
                   int64_t start, int32_t ctx, int32_t batch_rows, int32_t bos, ThreadPool* pool,
                   const std::function<void(std::span<const float>, int32_t)>& score) {
  const int64_t n_vocab = model.config().n_vocab;
  const int32_t first = ctx / 2;
  std::vector<float> logits;
  std::vector<float> lp(static_cast<size_t>(n_vocab));
  for (int32_t b = 0; b < ctx; b += batch_rows) {
    const int32_t n = std::min(batch_rows, ctx - b);
    model::Batch batch;
    int64_t n_logit_rows = 0;
    for (int32_t j = b; j < b + n; ++j) {
      int32_t tok = tokens[static_cast<size_t>(start + j)];
      if (j == 0 && bos >= 0) tok = bos;
      // Logits are needed only where they score the next token.
      const bool want = j >= first && j < ctx - 1;
      batch.add(tok, j, 0, want);
      n_logit_rows += want;
    }
    logits.resize(static_cast<size_t>(n_logit_rows * n_vocab));
    TS_RETURN_IF_ERROR(model.forward(batch, kv, logits, pool));
    int64_t row = 0;
    for (int32_t j = b; j < b + n; ++j) {
      if (!(j >= first && j < ctx - 1)) continue;
      log_softmax({logits.data() + row * n_vocab, static_cast<size_t>(n_vocab)}, lp);
      ++row;
      score(lp, tokens[static_cast<size_t>(start + j + 1)]);
    }
  }
  return Status();
}

struct Chunking {
  std::vector<int32_t> tokens;
  int64_t n_chunks = 0;
  int32_t bos = -1;  // substituted at each chunk's start; -1: the vocabulary adds none
};

Result<Chunking> chunk_text(const model::Tokenizer& tokenizer, std::string_view text, int32_t ctx,
                            int32_t batch, int64_t max_chunks) {
  if (ctx < 8 || batch < 1) {
    return invalid_argument(
        fmt::format("perplexity: ctx must be >= 8 and batch >= 1 (got {}, {})", ctx, batch));
  }
  Chunking c;
  c.tokens = tokenizer.encode(text, /*add_special=*/true, /*parse_special=*/false);
  c.n_chunks = static_cast<int64_t>(c.tokens.size()) / ctx;
  if (c.n_chunks == 0) {
    return invalid_argument(fmt::format(
        "perplexity: the text has {} tokens, fewer than one chunk of {} (use a longer text or a "
        "smaller --ctx)",
        c.tokens.size(), ctx));
  }
  if (max_chunks > 0) c.n_chunks = std::min(c.n_chunks, max_chunks);
  const int32_t bos = tokenizer.bos_id();
  if (bos >= 0 && c.tokens.front() == bos) c.bos = bos;
  return c;
}

}  // namespace

Result<PerplexityResult> perplexity(model::Model& model, const model::Tokenizer& tokenizer,
                                    std::string_view text, const PerplexityOptions& o) {
  TS_ASSIGN_OR_RETURN(Chunking ch, chunk_text(tokenizer, text, o.ctx, o.batch, o.max_chunks));
  PerplexityResult r;
  r.ctx = o.ctx;
  r.n_tokens = static_cast<int64_t>(ch.tokens.size());
  TS_ASSIGN_OR_RETURN(model::KvCache kv,
                      model::KvCache::create(model.config(), 1, o.ctx, kernels::DType::kF32));
  double nll = 0.0, nll2 = 0.0;
  int64_t count = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < ch.n_chunks; ++c) {
    // Positions restart at 0: the chunk overwrites the cache.
    TS_RETURN_IF_ERROR(score_chunk(model, kv, ch.tokens, c * o.ctx, o.ctx, o.batch, ch.bos, o.pool,
                                   [&](std::span<const float> lp, int32_t next) {
                                     const double v = -static_cast<double>(lp[static_cast<size_t>(next)]);
                                     nll += v;
                                     nll2 += v * v;
                                     ++count;
                                     if (o.on_scored) o.on_scored(lp, next);
                                   }));
    r.running_ppl.push_back(std::exp(nll / static_cast<double>(count)));
    if (o.progress) o.progress(c, ch.n_chunks, r.running_ppl.back());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.n_chunks = ch.n_chunks;
  r.n_scored = count;
  r.mean_nll = nll / static_cast<double>(count);
  r.ppl = std::exp(r.mean_nll);
  const double var = nll2 / static_cast<double>(count) - r.mean_nll * r.mean_nll;
  r.ppl_stderr = var > 0 && count > 1 ? r.ppl * std::sqrt(var / static_cast<double>(count - 1)) : 0.0;
  r.tokens_per_second =
      r.seconds > 0 ? static_cast<double>(ch.n_chunks * o.ctx) / r.seconds : 0.0;
  return r;
}

Result<KlResult> kl_divergence(model::Model& base, model::Model& model,
                               const model::Tokenizer& tokenizer, std::string_view text,
                               const PerplexityOptions& o) {
  if (base.config().n_vocab != model.config().n_vocab) {
    return invalid_argument(fmt::format("kl: the models' vocabularies differ ({} and {} tokens)",
                                        base.config().n_vocab, model.config().n_vocab));
  }
  TS_ASSIGN_OR_RETURN(Chunking ch, chunk_text(tokenizer, text, o.ctx, o.batch, o.max_chunks));
  TS_ASSIGN_OR_RETURN(model::KvCache kv_base,
                      model::KvCache::create(base.config(), 1, o.ctx, kernels::DType::kF32));
  TS_ASSIGN_OR_RETURN(model::KvCache kv_model,
                      model::KvCache::create(model.config(), 1, o.ctx, kernels::DType::kF32));
  const size_t n_vocab = static_cast<size_t>(base.config().n_vocab);
  const int32_t per_chunk = o.ctx - 1 - o.ctx / 2;
  std::vector<float> base_lp(static_cast<size_t>(per_chunk) * n_vocab);
  KlResult r;
  r.ctx = o.ctx;
  r.n_chunks = ch.n_chunks;
  std::vector<double> kls;
  double nll_base = 0.0, nll_model = 0.0, same_top = 0.0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < ch.n_chunks; ++c) {
    int64_t i = 0;
    TS_RETURN_IF_ERROR(score_chunk(base, kv_base, ch.tokens, c * o.ctx, o.ctx, o.batch, ch.bos,
                                   o.pool, [&](std::span<const float> lp, int32_t next) {
                                     std::copy(lp.begin(), lp.end(), base_lp.begin() + i * n_vocab);
                                     nll_base -= lp[static_cast<size_t>(next)];
                                     ++i;
                                   }));
    i = 0;
    TS_RETURN_IF_ERROR(score_chunk(model, kv_model, ch.tokens, c * o.ctx, o.ctx, o.batch, ch.bos,
                                   o.pool, [&](std::span<const float> lp, int32_t next) {
                                     const float* p = base_lp.data() + i * n_vocab;
                                     double kl = 0.0;
                                     size_t top_p = 0, top_q = 0;
                                     for (size_t v = 0; v < n_vocab; ++v) {
                                       kl += std::exp(static_cast<double>(p[v])) *
                                             (static_cast<double>(p[v]) - lp[v]);
                                       if (p[v] > p[top_p]) top_p = v;
                                       if (lp[v] > lp[top_q]) top_q = v;
                                     }
                                     kls.push_back(std::max(0.0, kl));
                                     same_top += top_p == top_q;
                                     nll_model -= lp[static_cast<size_t>(next)];
                                     ++i;
                                   }));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto n = static_cast<double>(kls.size());
  r.n_scored = static_cast<int64_t>(kls.size());
  double sum = 0.0;
  for (double k : kls) sum += k;
  r.mean_kl = sum / n;
  std::vector<double> sorted = kls;
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) {
    return sorted[static_cast<size_t>(std::min(n - 1.0, std::floor(q * (n - 1.0) + 0.5)))];
  };
  r.median_kl = at(0.5);
  r.p99_kl = at(0.99);
  r.max_kl = sorted.back();
  r.top1_agreement = same_top / n;
  r.base_ppl = std::exp(nll_base / n);
  r.ppl = std::exp(nll_model / n);
  return r;
}

}  // namespace tessera::bench
