// PreTokenizer: splits text into the words that byte-level BPE merges within, using the regular
// expressions of the HuggingFace tokenizer a GGUF file names in tokenizer.ggml.pre ("llama-bpe",
// "qwen2", "gpt-2", ...). The expressions run in PCRE2 with UTF and UCP, so \p{L}, \p{N}, \s and
// friends come from PCRE2's Unicode tables. Several expressions apply in turn, each splitting
// the pieces of the one before; text between matches is kept as pieces of its own, so the words
// always concatenate back to the input. Invalid UTF-8 is tolerated (it never matches a class).
// Thread-safety: immutable after creation; split() may run on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::model {

// Behaviour that HuggingFace configures next to the expressions of some pre-tokenizers.
struct PreTokenizerTraits {
  bool ignore_merges = false;  // a word that is itself a token is not merged (llama3, tekken)
  bool add_bos = false;        // the model adds BOS by default (llama3, tekken, chameleon)
  bool has_bos = true;         // false: the model has no BOS at all (chatglm-bpe)
};

class PreTokenizer {
 public:
  using Traits = PreTokenizerTraits;

  // The pre-tokenizer named `name` (the value of tokenizer.ggml.pre; "" means "default").
  // Errors: kUnsupported naming an unknown pre-tokenizer.
  static Result<PreTokenizer> create(std::string_view name);

  // The name (a tokenizer.ggml.pre value) of the first known pre-tokenizer whose expressions are
  // exactly `patterns` (in order) and whose ignore_merges is `ignore_merges`; "" if none is.
  // How a HuggingFace tokenizer.json's Split / Digits / ByteLevel steps are given a name.
  static std::string_view name_for(const std::vector<std::string>& patterns, bool ignore_merges);

  // The GPT-2 expression that HuggingFace's ByteLevel pre-tokenizer applies when use_regex is set.
  static std::string_view gpt2_pattern();

  // A pre-tokenizer from explicit PCRE2 patterns (applied in order).
  // Errors: kInvalidArgument with PCRE2's message and offset for a pattern that does not compile.
  static Result<PreTokenizer> from_patterns(const std::vector<std::string>& patterns,
                                            Traits traits = {});

  // Splits `text` into non-empty words whose concatenation is `text`. Views point into `text`.
  std::vector<std::string_view> split(std::string_view text) const;

  const Traits& traits() const { return traits_; }

  class Regex;  // a compiled PCRE2 pattern; defined in pretokenizer.cpp

 private:
  std::vector<std::shared_ptr<const Regex>> regexes_;
  Traits traits_;
};

}  // namespace tessera::model
