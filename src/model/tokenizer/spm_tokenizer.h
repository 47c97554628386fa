// SpmTokenizer: SentencePiece-style BPE as GGUF "llama" vocabularies describe it (Llama 1/2,
// Mistral, Phi-3, ...), encoding as llama.cpp does: spaces become U+2581 "▁", a "▁" is prefixed
// to text at the start and after special tokens (tokenizer.ggml.add_space_prefix, default true),
// adjacent pieces are merged best-score-first, and characters with no token fall back to byte
// tokens "<0xXX>" (or the unknown token when the vocabulary has none).
// Thread-safety: immutable after construction; encode/decode may run on many threads at once.
#pragma once

#include <memory>

#include "tessera/model/format/metadata.h"
#include "tessera/model/tokenizer/vocab_tokenizer.h"

namespace tessera::model {

class SpmTokenizer : public VocabTokenizer {
 public:
  // Builds the tokenizer from tokenizer.ggml.* metadata. Defaults: BOS 1, EOS 2, unknown 0,
  // add BOS, no EOS, add space prefix. Errors as read_vocab / read_special_tokens.
  static Result<std::unique_ptr<Tokenizer>> create(const Metadata& metadata);

  SpmTokenizer(Vocab vocab, SpecialTokens special, bool add_space_prefix);

  // Normal tokens with "▁" as spaces, byte tokens as their byte, user-defined tokens verbatim;
  // control/unknown/unused tokens "" unless render_special; "" for an id out of range.
  std::string token_to_piece(int32_t id, bool render_special = false) const override;

  // Concatenates pieces; when the vocabulary adds a space prefix and strip_leading_space is set,
  // one leading space is removed from the first piece that is not a control or unknown token.
  std::string decode(std::span<const int32_t> ids, bool render_special = false,
                     bool strip_leading_space = true) const override;

 private:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<int32_t>& out) const override;
  // Appends the token of a merged piece, or its byte tokens if it is not a token.
  void append_piece(std::string_view piece, std::vector<int32_t>& out) const;

  bool add_space_prefix_;
};

}  // namespace tessera::model
