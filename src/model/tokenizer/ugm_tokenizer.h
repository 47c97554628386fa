// UgmTokenizer: SentencePiece's unigram model as GGUF "t5" vocabularies describe it (T5, and
// Hugging Face tokenizer.json files whose model is Unigram, hf_tokenizer_json.h), encoding as
// llama.cpp's UGM tokenizer does:
//  1. normalization: invalid UTF-8 bytes become U+FFFD; user-defined tokens pass verbatim;
//     spaces become "▁"; a "▁" is put before the first non-space character of each text
//     fragment (tokenizer.ggml.add_space_prefix, default true); with
//     tokenizer.ggml.remove_extra_whitespaces, runs of spaces collapse to one "▁" before each
//     word and leading/trailing spaces vanish. A precompiled charsmap
//     (tokenizer.ggml.precompiled_charsmap) is not implemented: creating the tokenizer fails.
//  2. Viterbi: the segmentation into normal, user-defined and unused tokens whose summed score
//     is highest (user-defined tokens score 0; ties keep the earlier-found, i.e. the segmentation
//     whose last token is shortest-first in trie order, as llama.cpp); a character no token
//     covers is the unknown token with score (lowest normal score - 10), consecutive unknowns
//     fused into one.
// One difference from llama.cpp, kept on purpose: where the vocabulary has SentencePiece byte
// tokens ("<0xXX>", typed byte), an uncovered character is spelled in byte tokens, as
// SentencePiece and Hugging Face's Unigram with byte_fallback do; llama.cpp emits <unk>.
// Decoding is SpmTokenizer's ("▁" -> space, byte tokens -> bytes, the leading space of a
// space-prefixed text removed).
// Thread-safety: immutable after construction; encode/decode may run on many threads at once.
#pragma once

#include <memory>

#include "tessera/model/tokenizer/spm_tokenizer.h"

namespace tessera::model {

class UgmTokenizer final : public SpmTokenizer {
 public:
  // Builds the tokenizer from tokenizer.ggml.* metadata. Defaults as llama.cpp's "t5": no BOS,
  // EOS 1, unknown 2, PAD 0, add EOS, add space prefix. Errors as read_vocab /
  // read_special_tokens; kUnsupported for a non-empty precompiled charsmap.
  static Result<std::unique_ptr<Tokenizer>> create(const Metadata& metadata);

  UgmTokenizer(Vocab vocab, SpecialTokens special, bool add_space_prefix,
               bool remove_extra_whitespaces);

  // The normalized text of one fragment (step 1 above); exposed for tests.
  std::string normalize(std::string_view text) const;

 private:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<int32_t>& out) const override;

  bool add_space_prefix_;
  bool remove_extra_whitespaces_;
  bool byte_fallback_;        // the vocabulary has all 256 byte tokens
  double unknown_score_;      // lowest normal score - 10
  size_t max_token_bytes_ = 0;
  std::vector<std::string> user_defined_;  // user-defined token texts, longest first
};

}  // namespace tessera::model
