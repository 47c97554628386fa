// Perplexity of a model over a text (`tessera eval perplexity`), by llama.cpp's convention so the
// numbers compare with its `llama-perplexity`: the text is tokenized once (BOS first when the
// vocabulary adds one), cut into whole chunks of `ctx` tokens (a partial last chunk is dropped),
// each chunk evaluated from an empty cache with its first token replaced by BOS (when the model
// uses one), and only the second half of each chunk scored: the log-likelihood of token j + 1
// from the logits at j for j in [ctx/2, ctx - 1), so every scored token sees at least ctx/2 of
// context. PPL = exp(mean NLL); its uncertainty is PPL x the standard error of the mean NLL (the
// delta method, as llama.cpp reports "+/-").
// Thread-safety: one call at a time per model (it runs the model's forward pass).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/model/model.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::bench {

struct PerplexityOptions {
  int32_t ctx = 512;          // tokens per chunk, >= 8
  int32_t batch = 512;        // rows per forward step (a chunk takes ceil(ctx / batch) steps)
  int64_t max_chunks = 0;     // 0: every whole chunk of the text
  ThreadPool* pool = nullptr;  // the forward pass's threads (null: one)
  // After each chunk: its index (from 0), the number of chunks and the running PPL.
  std::function<void(int64_t chunk, int64_t n_chunks, double ppl)> progress;
  // Called with each scored position's log-probabilities (n_vocab values) and the token that
  // came next, in text order (for KL-divergence against saved logits); may be null.
  std::function<void(std::span<const float> log_probs, int32_t next_token)> on_scored;
};

struct PerplexityResult {
  uint64_t tokens_hash = 0;  // of the evaluated chunks' token ids (see SavedLogitsWriter)
  int32_t ctx = 0;
  int64_t n_tokens = 0;   // of the whole text
  int64_t n_chunks = 0;   // evaluated
  int64_t n_scored = 0;   // tokens whose likelihood counts
  double ppl = 0.0;
  double ppl_stderr = 0.0;
  double mean_nll = 0.0;
  std::vector<double> running_ppl;  // after each chunk
  double seconds = 0.0;             // forward passes and scoring
  double tokens_per_second = 0.0;   // evaluated (not only scored) tokens per second
};

// Errors: kInvalidArgument for ctx < 8, batch < 1, or a text shorter than one chunk (the message
// says how many tokens it has and how many are needed); the model's forward errors.
Result<PerplexityResult> perplexity(model::Model& model, const model::Tokenizer& tokenizer,
                                    std::string_view text, const PerplexityOptions& options);

// How far `model`'s next-token distributions are from `base`'s over the same chunks and scored
// positions as perplexity() (both evaluated chunk by chunk in one run; the text tokenized with
// `tokenizer`, which both models must share): KL(base || model) per position, summarized as
// llama.cpp's KL-divergence report does.
struct KlResult {
  int32_t ctx = 0;
  int64_t n_chunks = 0, n_scored = 0;
  double mean_kl = 0.0, median_kl = 0.0, p99_kl = 0.0, max_kl = 0.0;  // nats
  double top1_agreement = 0.0;  // positions where both models' most likely token is the same
  double base_ppl = 0.0, ppl = 0.0;  // over the scored positions; delta PPL = ppl - base_ppl
  double seconds = 0.0;
};

// Errors: as perplexity(); kInvalidArgument when the vocabularies' sizes differ.
Result<KlResult> kl_divergence(model::Model& base, model::Model& model,
                               const model::Tokenizer& tokenizer, std::string_view text,
                               const PerplexityOptions& options);

// Base log-probabilities saved once (`tessera eval perplexity --save-logits FILE`) and compared
// many times (`tessera eval kl --base-logits FILE`): a header (magic "TSLOGIT1", n_vocab, ctx,
// chunks, scored positions, and a 64-bit FNV-1a hash of the evaluated chunks' token ids, all
// little-endian) then, per scored position in text order, the next token (int32) and n_vocab
// log-probabilities as f16 (about 2 bytes x vocabulary per position; f16 keeps the log-probability
// of every token within 0.016 nats down to e^-32, far below what moves a KL sum).
class SavedLogitsWriter {
 public:
  // Errors: kIoError.
  static Result<SavedLogitsWriter> create(const std::string& path);
  void add(std::span<const float> log_probs, int32_t next_token);
  // Writes the header (once the run is done). Errors: kIoError.
  Status finish(int32_t n_vocab, int32_t ctx, int64_t n_chunks, uint64_t tokens_hash);

 private:
  std::string path_;
  std::shared_ptr<std::FILE> file_;
  int64_t n_scored_ = 0;
  std::vector<uint16_t> row_;
};

// KL of `model` from saved base log-probabilities, over the same chunks (the text must tokenize
// to the tokens the file was made from; ctx and chunks come from the file).
// Errors: kNotFound / kCorruptData for an unreadable or malformed file (naming what is wrong),
// kInvalidArgument when the vocabulary, the text or the chunking does not match the file's.
Result<KlResult> kl_from_saved(model::Model& model, const model::Tokenizer& tokenizer,
                               std::string_view text, const std::string& saved_path,
                               const PerplexityOptions& options);

// The hash saved with the logits: FNV-1a over the first n_chunks x ctx token ids (little-endian).
uint64_t tokens_hash(std::span<const int32_t> tokens);

// Log-softmax of `logits` into `out` (same size), in double precision for the sum.
void log_softmax(std::span<const float> logits, std::span<float> out);

}  // namespace tessera::bench
