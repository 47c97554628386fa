// The training data of `tessera train` (pretraining and --lora) and `tessera bench train`: a text
// read once, tokenized with a model's tokenizer (--vocab) or a generated SentencePiece-style one,
// and split into training and held-out validation tokens (the last val_fraction).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"

namespace tessera::train {

struct TrainingData {
  model::Metadata vocab;         // the tokenizer's metadata (copied into the checkpoint)
  int64_t n_vocab = 0;
  std::vector<int32_t> tokens;   // the whole text
  size_t n_val = 0;              // the last n_val tokens are the validation split
  double tokenize_s = 0;
  std::span<const int32_t> train() const { return std::span(tokens).first(tokens.size() - n_val); }
  std::span<const int32_t> val() const { return std::span(tokens).last(n_val); }
};

// The whole training text at `path` (--text). Errors: kNotFound ("cannot read --text 'PATH'").
Result<std::string> read_training_text(const std::string& path);

// `vocab_path` empty: a generated vocabulary of `vocab_size` (>= 512) tokens. Errors:
// kInvalidArgument (vocab_size, val_fraction outside (0, 0.5)), the tokenizer's errors.
Result<TrainingData> tokenize_training_text(const std::string& text, const std::string& vocab_path,
                                            int64_t vocab_size, double val_fraction);

}  // namespace tessera::train
