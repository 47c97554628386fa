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

Result<PerplexityResult> perplexity(model::Model& model, const model::Tokenizer& tokenizer,
                                    std::string_view text, const PerplexityOptions& o) {
  if (o.ctx < 8 || o.batch < 1) {
    return invalid_argument(fmt::format("perplexity: ctx must be >= 8 and batch >= 1 (got {}, {})",
                                        o.ctx, o.batch));
  }
  const std::vector<int32_t> tokens = tokenizer.encode(text, /*add_special=*/true,
                                                       /*parse_special=*/false);
  PerplexityResult r;
  r.ctx = o.ctx;
  r.n_tokens = static_cast<int64_t>(tokens.size());
  int64_t n_chunks = r.n_tokens / o.ctx;
  if (n_chunks == 0) {
    return invalid_argument(fmt::format(
        "perplexity: the text has {} tokens, fewer than one chunk of {} (use a longer text or a "
        "smaller --ctx)",
        r.n_tokens, o.ctx));
  }
  if (o.max_chunks > 0) n_chunks = std::min(n_chunks, o.max_chunks);
  const int32_t bos = tokenizer.bos_id();
  const bool add_bos = !tokens.empty() && bos >= 0 && tokens.front() == bos;
  const int64_t n_vocab = model.config().n_vocab;
  TS_ASSIGN_OR_RETURN(model::KvCache kv,
                      model::KvCache::create(model.config(), 1, o.ctx, kernels::DType::kF32));
  const int32_t first = o.ctx / 2;
  std::vector<float> logits;
  std::vector<float> lp(static_cast<size_t>(n_vocab));
  double nll = 0.0, nll2 = 0.0;
  int64_t count = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t start = c * o.ctx;  // positions restart at 0: the chunk overwrites the cache
    for (int32_t b = 0; b < o.ctx; b += o.batch) {
      const int32_t n = std::min(o.batch, o.ctx - b);
      model::Batch batch;
      int64_t n_logit_rows = 0;
      for (int32_t j = b; j < b + n; ++j) {
        int32_t tok = tokens[static_cast<size_t>(start + j)];
        if (j == 0 && add_bos) tok = bos;
        // Logits are needed only where they score the next token.
        const bool want = j >= first && j < o.ctx - 1;
        batch.add(tok, j, 0, want);
        n_logit_rows += want;
      }
      logits.resize(static_cast<size_t>(n_logit_rows * n_vocab));
      TS_RETURN_IF_ERROR(model.forward(batch, kv, logits, o.pool));
      int64_t row = 0;
      for (int32_t j = b; j < b + n; ++j) {
        if (!(j >= first && j < o.ctx - 1)) continue;
        const std::span<const float> l(logits.data() + row * n_vocab, static_cast<size_t>(n_vocab));
        ++row;
        log_softmax(l, lp);
        const int32_t next = tokens[static_cast<size_t>(start + j + 1)];
        const double v = -static_cast<double>(lp[static_cast<size_t>(next)]);
        nll += v;
        nll2 += v * v;
        ++count;
        if (o.on_scored) o.on_scored(lp, next);
      }
    }
    r.running_ppl.push_back(std::exp(nll / static_cast<double>(count)));
    if (o.progress) o.progress(c, n_chunks, r.running_ppl.back());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.n_chunks = n_chunks;
  r.n_scored = count;
  r.mean_nll = nll / static_cast<double>(count);
  r.ppl = std::exp(r.mean_nll);
  const double var = nll2 / static_cast<double>(count) - r.mean_nll * r.mean_nll;
  r.ppl_stderr = var > 0 && count > 1 ? r.ppl * std::sqrt(var / static_cast<double>(count - 1)) : 0.0;
  r.tokens_per_second =
      r.seconds > 0 ? static_cast<double>(n_chunks * o.ctx) / r.seconds : 0.0;
  return r;
}

}  // namespace tessera::bench
