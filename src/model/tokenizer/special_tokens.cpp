#include "tessera/model/tokenizer/special_tokens.h"

#include <algorithm>

namespace tessera::model {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenAttr a = vocab.attr(id);
    if (a != TokenAttr::kControl && a != TokenAttr::kUserDefined && a != TokenAttr::kUnknown)
      continue;
    if (vocab.text(id).empty()) continue;
    entries_.push_back({vocab.text(id), id, a != TokenAttr::kUserDefined});
  }
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.text.size() > b.text.size(); });
}

std::vector<Fragment> SpecialTokenMatcher::partition(std::string_view text,
                                                     bool parse_special) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, text});
  std::vector<Fragment> next;
  for (const Entry& e : entries_) {
    if (e.needs_parse_special && !parse_special) continue;
    // Cheap rejection: most special tokens do not occur in the input at all.
    if (text.find(e.text) == std::string_view::npos) continue;
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (size_t at; (at = rest.find(e.text)) != std::string_view::npos;) {
        if (at > 0) next.push_back({-1, rest.substr(0, at)});
        next.push_back({e.id, {}});
        rest.remove_prefix(at + e.text.size());
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace tessera::model
