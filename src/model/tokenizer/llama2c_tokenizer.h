// Llama2cTokenizer: the tokenizer of Karpathy's llama2.c (tokenizer.bin, tok512.bin, ...),
// matching run.c: encode prepends the token for " " to non-empty text, looks each UTF-8
// character up (falling back to byte tokens id = byte + 3), then repeatedly merges the adjacent
// pair whose concatenation is a token with the highest score, the leftmost on ties. Decode strips
// the leading space of a piece that follows BOS and turns "<0xXX>" pieces into raw bytes.
// Ids: 0 <unk>, 1 BOS, 2 EOS, 3..258 the bytes. There are no special-token strings to parse.
// Thread-safety: immutable after construction; encode/decode may run on many threads at once.
#pragma once

#include <memory>
#include <string>

#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/model/tokenizer/vocab.h"

namespace tessera::model {

class Llama2cTokenizer final : public Tokenizer {
 public:
  // Reads the file format: int32 max_token_length, then per token float32 score, int32 length,
  // length bytes. Errors: kInvalidArgument for n_vocab < 3, kNotFound/kIoError from opening
  // the file, kCorruptData (naming the token) for truncation or a negative or oversized length.
  static Result<std::unique_ptr<Tokenizer>> load(const std::string& path, int32_t n_vocab);

  explicit Llama2cTokenizer(Vocab vocab);

  // add_special prepends BOS (run.c's bos=1; it never adds EOS). parse_special is ignored.
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  // Byte tokens give their byte; <unk>, BOS and EOS give "" unless render_special.
  std::string token_to_piece(int32_t id, bool render_special = false) const override;
  // As run.c: a piece that follows BOS, or starts the sequence, loses one leading space when
  // strip_leading_space.
  std::string decode(std::span<const int32_t> ids, bool render_special = false,
                     bool strip_leading_space = true) const override;

  int32_t n_vocab() const override { return vocab_.size(); }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return kEos; }
  // BOS and EOS: llama2.c models mark the end of a story with BOS.
  bool is_end_of_generation(int32_t id) const override { return id == kBos || id == kEos; }
  std::string_view token_text(int32_t id) const override;

  static constexpr int32_t kUnk = 0;
  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;
  static constexpr int32_t kFirstByte = 3;

 private:
  // run.c's first pass: the " " token for non-empty text, then each character's token or its
  // byte tokens.
  std::vector<int32_t> spell(std::string_view text) const;
  // run.c's second pass: merge the best-scoring adjacent pair until no pair forms a token.
  std::vector<int32_t> merge(const std::vector<int32_t>& ids) const;

  Vocab vocab_;
};

}  // namespace tessera::model
