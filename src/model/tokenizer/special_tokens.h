// SpecialTokenMatcher: the first step of encoding. Finds the strings of special tokens in the
// input and cuts the input around them, so that "<|im_start|>user" becomes the token
// <|im_start|> followed by the text "user" for the tokenizer proper.
// Longer special tokens are placed first, then shorter ones in the text that remains (llama.cpp's
// order). User-defined tokens are always matched (as HuggingFace does for added tokens that are
// not special); control and unknown tokens only when the caller asks to parse special tokens.
// Thread-safety: immutable after construction; partition() may run on many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/model/tokenizer/vocab.h"

namespace tessera::model {

// One piece of partitioned input: a special token, or text still to be tokenized.
struct Fragment {
  int32_t token = -1;     // >= 0: this fragment is that special token
  std::string_view text;  // token < 0: the raw text (a view into the input)
};

class SpecialTokenMatcher {
 public:
  // Collects the control, user-defined and unknown tokens of `vocab` (empty strings skipped).
  explicit SpecialTokenMatcher(const Vocab& vocab);

  // Splits `text` into fragments in input order; text fragments are never empty. The views
  // point into `text`, which must outlive the result.
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;

 private:
  struct Entry {
    std::string text;
    int32_t id;
    bool needs_parse_special;  // control/unknown tokens; user-defined ones are always matched
  };
  std::vector<Entry> entries_;  // longest first, then by id
};

}  // namespace tessera::model
