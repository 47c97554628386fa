// BpeTokenizer: byte-level BPE as GGUF "gpt2" vocabularies describe it (GPT-2, Llama 3, Qwen2,
// StarCoder, Falcon, DeepSeek, ...). Text is split into words by the pre-tokenizer that
// tokenizer.ggml.pre names, each word's bytes are spelled in the byte-level alphabet, and the
// pair with the lowest merge rank (tokenizer.ggml.merges, rank = index) is merged until none
// applies. Decoding maps the alphabet back to bytes.
// Thread-safety: immutable after construction; encode/decode may run on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/format/metadata.h"
#include "tessera/model/tokenizer/pretokenizer.h"
#include "tessera/model/tokenizer/vocab_tokenizer.h"

namespace tessera::model {

class BpeTokenizer final : public VocabTokenizer {
 public:
  // Builds the tokenizer from tokenizer.ggml.* metadata. BOS/EOS have no defaults; add_bos
  // defaults to what the pre-tokenizer's model does (true for llama3). A missing
  // tokenizer.ggml.pre means "default", with a warning.
  // Errors: kNotFound without tokens or merges, kUnsupported for an unknown pre-tokenizer,
  // kCorruptData for malformed arrays.
  static Result<std::unique_ptr<Tokenizer>> create(const Metadata& metadata);

  // `merges` holds "left right" strings; a merge's rank is its index (the first of duplicates
  // wins). As in HuggingFace, both sides and their concatenation must be tokens; merges that
  // are not are skipped, with one warning giving their number.
  BpeTokenizer(Vocab vocab, SpecialTokens special, PreTokenizer pre_tokenizer,
               const std::vector<std::string_view>& merges);

  // Normal tokens decoded from the byte-level alphabet, user-defined tokens verbatim;
  // control/unknown/unused tokens "" unless render_special; "" for an id out of range.
  std::string token_to_piece(int32_t id, bool render_special = false) const override;

 private:
  // What merging the tokens (left, right) gives, and how early the merge applies.
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  // Open-addressing table from a (left id, right id) pair to its merge.
  class MergeTable {
   public:
    void reserve(size_t n);
    void insert(int32_t left, int32_t right, Merge merge);  // keeps an existing entry
    const Merge* find(int32_t left, int32_t right) const;

   private:
    size_t slot_of(uint64_t key) const;
    std::vector<uint64_t> keys_;  // (left << 32 | right), or kEmpty
    std::vector<Merge> merges_;
    size_t n_used_ = 0;
  };
  struct Scratch;  // per-call working memory, defined in the .cpp

  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<int32_t>& out) const override;
  // Merges one pre-tokenized word (raw bytes) and appends its tokens.
  void encode_word(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const;

  PreTokenizer pre_tokenizer_;
  MergeTable merges_;
  int32_t byte_ids_[256];  // the token of each byte's alphabet character, or -1
};

}  // namespace tessera::model
