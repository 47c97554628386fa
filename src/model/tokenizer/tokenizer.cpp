#include "tessera/model/tokenizer/tokenizer.h"

#include <fmt/format.h>

#include "tessera/model/tokenizer/bpe_tokenizer.h"
#include "tessera/model/tokenizer/llama2c_tokenizer.h"
#include "tessera/model/tokenizer/spm_tokenizer.h"
#include "tessera/model/tokenizer/ugm_tokenizer.h"

namespace tessera::model {

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special,
                              bool /*strip_leading_space*/) const {
  std::string out;
  for (int32_t id : ids) out += token_to_piece(id, render_special);
  return out;
}

Result<std::unique_ptr<Tokenizer>> make_tokenizer(const Metadata& metadata) {
  constexpr std::string_view kModelKey = "tokenizer.ggml.model";
  if (!metadata.contains(kModelKey)) {
    return not_found(fmt::format("the model file has no tokenizer (no '{}' key)", kModelKey));
  }
  TS_ASSIGN_OR_RETURN(std::string model, metadata.get_string(kModelKey));
  Result<std::unique_ptr<Tokenizer>> tokenizer =
      model == "llama"  ? SpmTokenizer::create(metadata)
      : model == "gpt2" ? BpeTokenizer::create(metadata)
      : model == "t5"   ? UgmTokenizer::create(metadata)
                        : Result<std::unique_ptr<Tokenizer>>(unsupported(fmt::format(
                              "tokenizer model '{}' ({}) is not supported; expected 'llama' "
                              "(SentencePiece BPE), 'gpt2' (byte-level BPE) or 't5' (unigram)",
                              model, kModelKey)));
  if (!tokenizer.is_ok()) return tokenizer.status().with_context("building the tokenizer");
  return tokenizer;
}

Result<std::unique_ptr<Tokenizer>> load_llama2c_tokenizer(const std::string& path,
                                                          int32_t n_vocab) {
  return Llama2cTokenizer::load(path, n_vocab);
}

}  // namespace tessera::model
