#include "tessera/model/tokenizer/vocab_tokenizer.h"

#include <algorithm>

namespace tessera::model {

VocabTokenizer::VocabTokenizer(Vocab vocab, SpecialTokens special)
    : vocab_(std::move(vocab)), special_(std::move(special)), matcher_(vocab_) {}

std::vector<int32_t> VocabTokenizer::encode(std::string_view text, bool add_special,
                                            bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && special_.add_bos && special_.bos >= 0) out.push_back(special_.bos);
  bool after_special = true;
  for (const Fragment& f : matcher_.partition(text, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_fragment(f.text, after_special, out);
      after_special = false;
    }
  }
  if (add_special && special_.add_eos && special_.eos >= 0) out.push_back(special_.eos);
  return out;
}

bool VocabTokenizer::is_end_of_generation(int32_t id) const {
  const auto& eog = special_.end_of_generation;
  return std::binary_search(eog.begin(), eog.end(), id);
}

std::string_view VocabTokenizer::token_text(int32_t id) const {
  return vocab_.contains(id) ? std::string_view(vocab_.text(id)) : std::string_view();
}

bool VocabTokenizer::is_hidden(int32_t id) const {
  const TokenAttr a = vocab_.attr(id);
  return a == TokenAttr::kControl || a == TokenAttr::kUnknown || a == TokenAttr::kUnused;
}

}  // namespace tessera::model
