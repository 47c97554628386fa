// VocabTokenizer: what the GGUF tokenizers (SentencePiece and byte-level BPE) share: the
// vocabulary, its special tokens, and the encode skeleton: optional BOS, special-token
// partitioning, each text fragment handed to the subclass, optional EOS.
// Thread-safety: immutable after construction; encode/decode may run on many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/tokenizer/special_tokens.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/model/tokenizer/vocab.h"

namespace tessera::model {

class VocabTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;

  int32_t n_vocab() const override { return vocab_.size(); }
  int32_t bos_id() const override { return special_.bos; }
  int32_t eos_id() const override { return special_.eos; }
  bool is_end_of_generation(int32_t id) const override;
  // Returns "" for an id outside the vocabulary.
  std::string_view token_text(int32_t id) const override;

  const Vocab& vocab() const { return vocab_; }
  const SpecialTokens& special_tokens() const { return special_; }

 protected:
  VocabTokenizer(Vocab vocab, SpecialTokens special);

  // Appends the tokens of one text fragment (never empty) to `out`. `after_special` is true for
  // the first fragment and for fragments that follow a special token.
  virtual void encode_fragment(std::string_view text, bool after_special,
                               std::vector<int32_t>& out) const = 0;

  // True for tokens whose piece is hidden unless render_special: control, unknown, unused.
  bool is_hidden(int32_t id) const;

  Vocab vocab_;
  SpecialTokens special_;
  SpecialTokenMatcher matcher_;
};

}  // namespace tessera::model
