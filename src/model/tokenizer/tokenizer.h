// Tokenizer: text <-> token ids for one vocabulary. Implementations: SentencePiece-style
// ("llama" in GGUF), byte-level BPE ("gpt2", with a pre-tokenizer chosen by
// tokenizer.ggml.pre) and the llama2.c tokenizer file.
// Thread-safety: immutable after construction; encode/decode may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"

namespace tessera::model {

enum class TokenAttr : uint8_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes `text`. add_special: prepend BOS / append EOS as the vocabulary's metadata says
  // (tokenizer.ggml.add_bos_token / add_eos_token, with the model type's defaults).
  // parse_special: text matching a control or user-defined token's string becomes that token
  // instead of being split.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;

  // The bytes token `id` stands for when decoding (byte tokens give their byte; SentencePiece's
  // U+2581 becomes a space; control tokens give "" unless render_special). The bytes may be an
  // incomplete UTF-8 sequence; callers that stream should buffer until complete.
  virtual std::string token_to_piece(int32_t id, bool render_special = false) const = 0;

  // Decodes a sequence, handling the leading-space rule of SentencePiece vocabularies
  // (a space added by the encoder's prefix is removed when `strip_leading_space`).
  virtual std::string decode(std::span<const int32_t> ids, bool render_special = false,
                             bool strip_leading_space = true) const;

  virtual int32_t n_vocab() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 if none
  virtual int32_t eos_id() const = 0;  // -1 if none
  // True for tokens that end generation (EOS, EOT/<|eot_id|>, <|im_end|>, ...).
  virtual bool is_end_of_generation(int32_t id) const = 0;
  // The vocabulary string of `id` as stored (for debugging and JSON output). Precondition: valid id.
  virtual std::string_view token_text(int32_t id) const = 0;
};

// Builds the tokenizer described by GGUF metadata (tokenizer.ggml.*).
// Errors: kNotFound when the file has no tokenizer, kUnsupported for an unknown model or
// pre-tokenizer type (naming it), kCorruptData for inconsistent arrays.
Result<std::unique_ptr<Tokenizer>> make_tokenizer(const Metadata& metadata);

// Loads a llama2.c tokenizer file (tokenizer.bin / tok512.bin) for a vocabulary of `n_vocab`.
// Encodes as llama2.c's run.c does (dummy-prefix space, byte fallback, greedy score merges).
Result<std::unique_ptr<Tokenizer>> load_llama2c_tokenizer(const std::string& path, int32_t n_vocab);

}  // namespace tessera::model
