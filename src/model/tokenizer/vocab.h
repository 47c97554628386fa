// Vocab: the token table every tokenizer works from: each token's string, score and kind,
// a hash index from string to id, and the special token ids and add-BOS/EOS flags that GGUF
// metadata (tokenizer.ggml.*) declares. Built once when a model loads, then read-only.
// Thread-safety: immutable after construction; concurrent reads are safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::model {

class Vocab {
 public:
  // Takes the token table. `scores` and `attrs` must be as long as `texts` (checked).
  // Where two tokens share a string, lookups by string find the later one (as llama.cpp does).
  Vocab(std::vector<std::string> texts, std::vector<float> scores, std::vector<TokenAttr> attrs);

  int32_t size() const { return static_cast<int32_t>(texts_.size()); }
  bool contains(int32_t id) const { return id >= 0 && id < size(); }

  // The id of the token spelled exactly `text`, or -1.
  int32_t find(std::string_view text) const;

  // Preconditions for the three below: contains(id).
  const std::string& text(int32_t id) const { return texts_[id]; }
  float score(int32_t id) const { return scores_[id]; }
  TokenAttr attr(int32_t id) const { return attrs_[id]; }

  // The SentencePiece byte-fallback token "<0xXX>" for `b`, or -1 if the vocabulary has none.
  int32_t byte_token(uint8_t b) const { return byte_tokens_[b]; }

  // The byte that token `id` spells as "<0xXX>", or -1 if it is not spelled so.
  // Precondition: contains(id).
  int token_byte(int32_t id) const;

 private:
  // The string index is an open-addressing table of ids (linear probing, at most half full):
  // one allocation for the whole vocabulary instead of one node and one key copy per token.
  size_t slot_of(std::string_view text) const;

  std::vector<std::string> texts_;
  std::vector<float> scores_;
  std::vector<TokenAttr> attrs_;
  std::vector<int32_t> slots_;  // token id or -1; size a power of two
  int32_t byte_tokens_[256];
};

// The special token ids and flags of a vocabulary. Ids are -1 where the vocabulary has none.
struct SpecialTokens {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t pad = -1;
  int32_t eot = -1;  // end of turn, e.g. <|eot_id|>
  int32_t eom = -1;  // end of message, e.g. <|eom_id|>
  bool add_bos = false;
  bool add_eos = false;
  // Tokens that end generation: eos, eot, eom and well-known end markers found by their text.
  std::vector<int32_t> end_of_generation;
};

// Reads tokenizer.ggml.tokens (required), .scores and .token_type (optional; default 0 and
// normal). Errors: kNotFound when the token list is missing, kCorruptData when an array has the
// wrong element type or fewer items than the token list, or the list is empty.
Result<Vocab> read_vocab(const Metadata& metadata);

// Reads the special token ids and add_bos/add_eos flags over `defaults` (the model type's).
// An id key that is present but out of range is ignored with a warning (llama.cpp does the same),
// and defaults that are out of range become -1. Errors: kInvalidArgument for a key of the wrong
// type.
Result<SpecialTokens> read_special_tokens(const Metadata& metadata, const Vocab& vocab,
                                          SpecialTokens defaults);

// Fills `special.end_of_generation` from eos/eot/eom and the texts of well-known end markers.
void collect_end_of_generation(const Vocab& vocab, SpecialTokens& special);

}  // namespace tessera::model
