#include "tessera/bench/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "tessera/kernels/half.h"
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

// KL statistics over positions, and both PPLs from their summed NLLs.
void summarize(std::vector<double> kls, double same_top, double nll_base, double nll_model,
               KlResult& r) {
  const auto n = static_cast<double>(kls.size());
  r.n_scored = static_cast<int64_t>(kls.size());
  double sum = 0.0;
  for (double k : kls) sum += k;
  r.mean_kl = sum / n;
  std::sort(kls.begin(), kls.end());
  const auto at = [&](double q) {
    return kls[static_cast<size_t>(std::min(n - 1.0, std::floor(q * (n - 1.0) + 0.5)))];
  };
  r.median_kl = at(0.5);
  r.p99_kl = at(0.99);
  r.max_kl = kls.back();
  r.top1_agreement = same_top / n;
  r.base_ppl = std::exp(nll_base / n);
  r.ppl = std::exp(nll_model / n);
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
  r.tokens_hash = tokens_hash({ch.tokens.data(), static_cast<size_t>(ch.n_chunks * o.ctx)});
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
  summarize(kls, same_top, nll_base, nll_model, r);
  return r;
}

uint64_t tokens_hash(std::span<const int32_t> tokens) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : tokens) {
    const auto u = static_cast<uint32_t>(t);
    for (int b = 0; b < 4; ++b) {
      h ^= (u >> (8 * b)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  return h;
}

namespace {

constexpr char kMagic[8] = {'T', 'S', 'L', 'O', 'G', 'I', 'T', '1'};
constexpr size_t kHeaderBytes = 40;

void put_u32(uint8_t* p, uint32_t v) {
  for (int b = 0; b < 4; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int b = 0; b < 8; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int b = 0; b < 4; ++b) v |= static_cast<uint32_t>(p[b]) << (8 * b);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
  return v;
}

}  // namespace

Result<SavedLogitsWriter> SavedLogitsWriter::create(const std::string& path) {
  SavedLogitsWriter w;
  w.path_ = path;
  w.file_.reset(std::fopen(path.c_str(), "wb"), [](std::FILE* f) {
    if (f != nullptr) std::fclose(f);
  });
  if (!w.file_) return Status(ErrorCode::kIoError, "cannot write " + path);
  const std::vector<uint8_t> blank(kHeaderBytes, 0);  // the header goes in last
  if (std::fwrite(blank.data(), 1, blank.size(), w.file_.get()) != blank.size()) {
    return Status(ErrorCode::kIoError, "cannot write " + path);
  }
  return w;
}

void SavedLogitsWriter::add(std::span<const float> log_probs, int32_t next_token) {
  row_.resize(log_probs.size());
  for (size_t i = 0; i < log_probs.size(); ++i) row_[i] = kernels::f32_to_f16(log_probs[i]);
  uint8_t next[4];
  put_u32(next, static_cast<uint32_t>(next_token));
  std::fwrite(next, 1, 4, file_.get());
  std::fwrite(row_.data(), 2, row_.size(), file_.get());  // f16 bits, little-endian on x86
  ++n_scored_;
}

Status SavedLogitsWriter::finish(int32_t n_vocab, int32_t ctx, int64_t n_chunks, uint64_t hash) {
  uint8_t h[kHeaderBytes];
  std::memcpy(h, kMagic, 8);
  put_u32(h + 8, static_cast<uint32_t>(n_vocab));
  put_u32(h + 12, static_cast<uint32_t>(ctx));
  put_u64(h + 16, static_cast<uint64_t>(n_chunks));
  put_u64(h + 24, static_cast<uint64_t>(n_scored_));
  put_u64(h + 32, hash);
  if (std::fseek(file_.get(), 0, SEEK_SET) != 0 || std::fwrite(h, 1, kHeaderBytes, file_.get()) != kHeaderBytes ||
      std::fflush(file_.get()) != 0 || std::ferror(file_.get())) {
    return Status(ErrorCode::kIoError, "cannot write " + path_);
  }
  return Status();
}

Result<KlResult> kl_from_saved(model::Model& model, const model::Tokenizer& tokenizer,
                               std::string_view text, const std::string& path,
                               const PerplexityOptions& o) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Status(ErrorCode::kNotFound, "cannot read the saved logits " + path);
  uint8_t h[kHeaderBytes];
  if (std::fread(h, 1, kHeaderBytes, f.get()) != kHeaderBytes || std::memcmp(h, kMagic, 8) != 0) {
    return corrupt_data(path + ": not a saved-logits file (expected the TSLOGIT1 header; write one "
                               "with `tessera eval perplexity --save-logits`)");
  }
  const uint32_t n_vocab = get_u32(h + 8);
  const uint32_t ctx = get_u32(h + 12);
  const uint64_t n_chunks = get_u64(h + 16), n_scored = get_u64(h + 24), hash = get_u64(h + 32);
  std::fseek(f.get(), 0, SEEK_END);
  const auto size = static_cast<uint64_t>(std::ftell(f.get()));
  std::fseek(f.get(), static_cast<long>(kHeaderBytes), SEEK_SET);
  const uint64_t per_chunk = ctx >= 8 ? ctx - 1 - ctx / 2 : 0;
  if (ctx < 8 || n_vocab == 0 || n_chunks == 0 || n_chunks > (1ull << 32) || n_vocab > (1u << 24) ||
      n_scored != n_chunks * per_chunk ||
      size != kHeaderBytes + n_scored * (4 + 2 * static_cast<uint64_t>(n_vocab))) {
    return corrupt_data(fmt::format("{}: inconsistent saved logits (vocabulary {}, ctx {}, {} chunks, "
                                    "{} positions, {} bytes)",
                                    path, n_vocab, ctx, n_chunks, n_scored, size));
  }
  if (static_cast<int64_t>(n_vocab) != model.config().n_vocab) {
    return invalid_argument(fmt::format("{}: saved for a vocabulary of {} tokens, the model has {}",
                                        path, n_vocab, model.config().n_vocab));
  }
  TS_ASSIGN_OR_RETURN(Chunking ch, chunk_text(tokenizer, text, static_cast<int32_t>(ctx), o.batch,
                                              static_cast<int64_t>(n_chunks)));
  if (static_cast<uint64_t>(ch.n_chunks) != n_chunks ||
      tokens_hash({ch.tokens.data(), static_cast<size_t>(n_chunks * ctx)}) != hash) {
    return invalid_argument(fmt::format("{}: saved from another text or tokenizer (its {} chunks of {} "
                                        "tokens do not match this text's)",
                                        path, n_chunks, ctx));
  }
  TS_ASSIGN_OR_RETURN(model::KvCache kv,
                      model::KvCache::create(model.config(), 1, ctx, kernels::DType::kF32));
  KlResult r;
  r.ctx = static_cast<int32_t>(ctx);
  r.n_chunks = static_cast<int64_t>(n_chunks);
  std::vector<uint16_t> row(n_vocab);
  std::vector<float> p(n_vocab);
  std::vector<double> kls;
  double nll_base = 0.0, nll_model = 0.0, same_top = 0.0;
  bool bad = false;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t c = 0; c < n_chunks && !bad; ++c) {
    TS_RETURN_IF_ERROR(score_chunk(
        model, kv, ch.tokens, static_cast<int64_t>(c * ctx), static_cast<int32_t>(ctx), o.batch,
        ch.bos, o.pool, [&](std::span<const float> lp, int32_t next) {
          uint8_t nb[4];
          if (bad || std::fread(nb, 1, 4, f.get()) != 4 ||
              std::fread(row.data(), 2, n_vocab, f.get()) != n_vocab ||
              static_cast<int32_t>(get_u32(nb)) != next) {
            bad = true;
            return;
          }
          double kl = 0.0;
          size_t top_p = 0, top_q = 0;
          for (size_t v = 0; v < n_vocab; ++v) {
            p[v] = kernels::f16_to_f32(row[v]);
            kl += std::exp(static_cast<double>(p[v])) * (static_cast<double>(p[v]) - lp[v]);
            if (p[v] > p[top_p]) top_p = v;
            if (lp[v] > lp[top_q]) top_q = v;
          }
          kls.push_back(std::max(0.0, kl));
          same_top += top_p == top_q;
          nll_base -= p[static_cast<size_t>(next)];
          nll_model -= lp[static_cast<size_t>(next)];
        }));
  }
  if (bad) return corrupt_data(path + ": a saved position does not match the text's next token");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  summarize(kls, same_top, nll_base, nll_model, r);
  return r;
}

}  // namespace tessera::bench
