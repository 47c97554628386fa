#include "tessera/train/training_data.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "tessera/model/format/model_file.h"
#include "tessera/model/synth.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::train {

Result<std::string> read_training_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read --text '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<TrainingData> tokenize_training_text(const std::string& text, const std::string& vocab_path,
                                            int64_t vocab_size, double val_fraction) {
  if (!(val_fraction > 0 && val_fraction < 0.5)) {
    return invalid_argument("--val-fraction must be in (0, 0.5)");
  }
  TrainingData d;
  if (!vocab_path.empty()) {
    auto f = model::open_model_file(vocab_path);
    if (!f.is_ok()) return f.status().with_context("--vocab");
    d.vocab = f->metadata;
  } else {
    if (vocab_size < 512) return invalid_argument("--vocab-size must be at least 512");
    d.vocab = model::synthetic_vocab(vocab_size);
  }
  auto tok = model::make_tokenizer(d.vocab);
  if (!tok.is_ok()) return tok.status().with_context("tokenizer");
  const auto t0 = std::chrono::steady_clock::now();
  d.tokens = (*tok)->encode(text, /*add_special=*/false, /*parse_special=*/false);
  d.tokenize_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  d.n_vocab = (*tok)->n_vocab();
  d.n_val = static_cast<size_t>(static_cast<double>(d.tokens.size()) * val_fraction);
  return d;
}

}  // namespace tessera::train
