#include "tessera/model/activation_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tessera/model/kv_cache.h"

namespace tessera::model {

std::vector<float> ActivationStats::column_rms(std::string_view tensor) const {
  const auto it = tensors.find(std::string(tensor));
  if (it == tensors.end() || it->second.count <= 0) return {};
  const TensorActivationStats& t = it->second;
  std::vector<float> rms(t.sum_sq.size());
  for (size_t j = 0; j < rms.size(); ++j) {
    rms[j] = static_cast<float>(std::sqrt(t.sum_sq[j] / static_cast<double>(t.count)));
  }
  return rms;
}

namespace {

// Adds each observed input's squares to its tensor's sums.
class Accumulator final : public MatmulInputObserver {
 public:
  Accumulator(ActivationStats* stats, bool covariance) : stats_(stats), covariance_(covariance) {}
  void observe(std::string_view tensor, const float* x, int64_t n_tokens,
               int64_t n_cols) override {
    TensorActivationStats& t = stats_->tensors[std::string(tensor)];
    if (t.sum_sq.empty()) t.sum_sq.assign(static_cast<size_t>(n_cols), 0.0);
    if (static_cast<int64_t>(t.sum_sq.size()) != n_cols) {
      mismatch_ = std::string(tensor);
      return;
    }
    for (int64_t r = 0; r < n_tokens; ++r) {
      const float* row = x + r * n_cols;
      for (int64_t j = 0; j < n_cols; ++j) {
        t.sum_sq[static_cast<size_t>(j)] += static_cast<double>(row[j]) * row[j];
      }
    }
    if (covariance_) {
      // The lower triangle here; finish() mirrors it.
      if (t.sum_xxt.empty()) t.sum_xxt.assign(static_cast<size_t>(n_cols * n_cols), 0.0);
      for (int64_t r = 0; r < n_tokens; ++r) {
        const float* row = x + r * n_cols;
        for (int64_t i = 0; i < n_cols; ++i) {
          const double xi = row[i];
          if (xi == 0.0) continue;
          double* dst = t.sum_xxt.data() + i * n_cols;
          for (int64_t j = 0; j <= i; ++j) dst[j] += xi * row[j];
        }
      }
    }
    t.count += n_tokens;
  }
  // Mirrors each sum_xxt's lower triangle into its upper one.
  void finish() {
    if (!covariance_) return;
    for (auto& [name, t] : stats_->tensors) {
      const auto n = static_cast<int64_t>(t.sum_sq.size());
      if (static_cast<int64_t>(t.sum_xxt.size()) != n * n) continue;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = i + 1; j < n; ++j) {
          t.sum_xxt[static_cast<size_t>(i * n + j)] = t.sum_xxt[static_cast<size_t>(j * n + i)];
        }
      }
    }
  }
  const std::string& mismatch() const { return mismatch_; }

 private:
  ActivationStats* stats_;
  bool covariance_;
  std::string mismatch_;  // a tensor reported with two widths (a model bug)
};

// Removes the observer however the collection ends.
struct ObserverGuard {
  Model& model;
  ~ObserverGuard() { model.set_matmul_input_observer(nullptr); }
};

}  // namespace

Result<ActivationStats> collect_activation_stats(Model& model, const Tokenizer& tokenizer,
                                                 std::string_view text,
                                                 const ActivationStatsOptions& options) {
  const int32_t ctx = options.ctx;
  if (ctx < 8) {
    return invalid_argument(fmt::format("activation statistics: ctx must be >= 8 (got {})", ctx));
  }
  // The chunking of perplexity() (bench/perplexity.h) and llama-imatrix: the text tokenized once
  // with the vocabulary's BOS, whole chunks of ctx tokens, each started from an empty cache with
  // its first token replaced by BOS.
  const std::vector<int32_t> tokens = tokenizer.encode(text, /*add_special=*/true,
                                                       /*parse_special=*/false);
  int64_t n_chunks = static_cast<int64_t>(tokens.size()) / ctx;
  if (n_chunks == 0) {
    return invalid_argument(fmt::format(
        "activation statistics: the text has {} tokens, fewer than one chunk of {} (use a longer "
        "text or a smaller --ctx)",
        tokens.size(), ctx));
  }
  if (options.max_chunks > 0) n_chunks = std::min(n_chunks, options.max_chunks);
  const int32_t bos = tokenizer.bos_id();
  const bool replace_bos = bos >= 0 && tokens.front() == bos;

  ActivationStats stats;
  stats.chunk_size = ctx;
  Accumulator acc(&stats, options.covariance);
  if (!model.set_matmul_input_observer(&acc)) {
    return Status(ErrorCode::kUnsupported,
                  "activation statistics: this architecture does not report its matmul inputs");
  }
  ObserverGuard guard{model};
  TS_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(model.config(), 1, ctx, kernels::DType::kF32));
  const int64_t n_vocab = model.config().n_vocab;
  std::vector<float> logits(static_cast<size_t>(ctx * n_vocab));
  for (int64_t c = 0; c < n_chunks; ++c) {
    Batch batch;
    for (int32_t j = 0; j < ctx; ++j) {
      int32_t tok = tokens[static_cast<size_t>(c * ctx + j)];
      if (j == 0 && replace_bos) tok = bos;
      batch.add(tok, j, 0, /*logits=*/true);  // every row: the output matrix sees them all
    }
    TS_RETURN_IF_ERROR(model.forward(batch, kv, logits, options.pool));
    if (!acc.mismatch().empty()) {
      return Status(ErrorCode::kInternal,
                    fmt::format("activation statistics: tensor '{}' was reported with two widths",
                                acc.mismatch()));
    }
    stats.n_chunks = c + 1;
    if (options.progress) options.progress(c, n_chunks);
  }
  acc.finish();
  return stats;
}

}  // namespace tessera::model
