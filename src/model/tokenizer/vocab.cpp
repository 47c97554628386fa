#include "tessera/model/tokenizer/vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>

#include "tessera/base/log.h"

namespace tessera::model {
namespace {

constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

// Parses "<0xXX>" (upper- or lower-case hex); -1 for anything else.
int parse_byte_token(std::string_view s) {
  if (s.size() != 6 || s.substr(0, 3) != "<0x" || s[5] != '>') return -1;
  int v = 0;
  for (char c : s.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else
      return -1;
  }
  return v;
}

// An optional per-token array: nullptr if absent, an error if present but unusable.
Result<const GgufArray*> optional_array(const Metadata& md, std::string_view key, size_t n_tokens) {
  if (!md.contains(key)) return static_cast<const GgufArray*>(nullptr);
  auto arr = md.get_array(key);
  if (!arr.is_ok()) return corrupt_data(arr.status().message());
  if ((*arr)->items.size() < n_tokens) {
    return corrupt_data(fmt::format("{} has {} items but {} has {}; expected one per token", key,
                                    (*arr)->items.size(), kTokensKey, n_tokens));
  }
  return *arr;
}

TokenAttr attr_from_gguf_type(int64_t t) {
  switch (t) {
    case 1:
      return TokenAttr::kNormal;
    case 2:
      return TokenAttr::kUnknown;
    case 3:
      return TokenAttr::kControl;
    case 4:
      return TokenAttr::kUserDefined;
    case 5:
      return TokenAttr::kUnused;
    case 6:
      return TokenAttr::kByte;
    default:
      return TokenAttr::kUnused;  // "undefined" (0) or unknown kinds: never produced
  }
}

}  // namespace

Vocab::Vocab(std::vector<std::string> texts, std::vector<float> scores,
             std::vector<TokenAttr> attrs)
    : texts_(std::move(texts)), scores_(std::move(scores)), attrs_(std::move(attrs)) {
  TS_CHECK(scores_.size() == texts_.size() && attrs_.size() == texts_.size());
  std::fill(std::begin(byte_tokens_), std::end(byte_tokens_), -1);
  size_t n_slots = 16;
  while (n_slots < 2 * texts_.size()) n_slots *= 2;
  slots_.assign(n_slots, -1);
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& t = texts_[id];
    if (t.empty()) continue;  // unreachable by lookup; an empty key would match nothing useful
    slots_[slot_of(t)] = id;  // a repeated string takes over its slot: the later id wins
    if (attrs_[id] == TokenAttr::kByte) {
      const int b = parse_byte_token(t);
      if (b >= 0 && byte_tokens_[b] < 0) byte_tokens_[b] = id;
    }
  }
  // Vocabularies without byte-typed tokens may still spell them "<0xXX>" (llama2.c files).
  for (int b = 0; b < 256; ++b) {
    if (byte_tokens_[b] >= 0) continue;
    byte_tokens_[b] = find(fmt::format("<0x{:02X}>", b));
  }
}

int Vocab::token_byte(int32_t id) const { return parse_byte_token(texts_[id]); }

size_t Vocab::slot_of(std::string_view text) const {
  const size_t mask = slots_.size() - 1;
  size_t slot = std::hash<std::string_view>{}(text)&mask;
  while (slots_[slot] >= 0 && texts_[slots_[slot]] != text) slot = (slot + 1) & mask;
  return slot;
}

int32_t Vocab::find(std::string_view text) const { return slots_[slot_of(text)]; }

Result<Vocab> read_vocab(const Metadata& md) {
  if (!md.contains(kTokensKey)) {
    return not_found(fmt::format("no tokenizer: metadata has no '{}'", kTokensKey));
  }
  auto tokens = md.get_array(kTokensKey);
  if (!tokens.is_ok()) return corrupt_data(tokens.status().message());
  const auto& items = (*tokens)->items;
  const size_t n = items.size();
  if (n == 0) return corrupt_data(fmt::format("'{}' is empty", kTokensKey));
  if (n > static_cast<size_t>(INT32_MAX)) {
    return corrupt_data(
        fmt::format("'{}' has {} tokens, more than int32 ids can address", kTokensKey, n));
  }
  TS_ASSIGN_OR_RETURN(const GgufArray* scores, optional_array(md, kScoresKey, n));
  TS_ASSIGN_OR_RETURN(const GgufArray* types, optional_array(md, kTypesKey, n));

  std::vector<std::string> texts(n);
  std::vector<float> score_values(n, 0.0f);
  std::vector<TokenAttr> attrs(n, TokenAttr::kNormal);
  for (size_t i = 0; i < n; ++i) {
    auto s = items[i].as_string();
    if (!s.is_ok())
      return corrupt_data(fmt::format("{}[{}]: {}", kTokensKey, i, s.status().message()));
    texts[i] = std::string(*s);
    if (scores != nullptr) {
      auto f = scores->items[i].as_float();
      if (!f.is_ok())
        return corrupt_data(fmt::format("{}[{}]: {}", kScoresKey, i, f.status().message()));
      score_values[i] = static_cast<float>(*f);
    }
    if (types != nullptr) {
      auto t = types->items[i].as_int();
      if (!t.is_ok())
        return corrupt_data(fmt::format("{}[{}]: {}", kTypesKey, i, t.status().message()));
      attrs[i] = attr_from_gguf_type(*t);
    }
  }
  return Vocab(std::move(texts), std::move(score_values), std::move(attrs));
}

Result<SpecialTokens> read_special_tokens(const Metadata& md, const Vocab& vocab,
                                          SpecialTokens defaults) {
  SpecialTokens s = std::move(defaults);
  const std::pair<std::string_view, int32_t*> keys[] = {
      {"tokenizer.ggml.bos_token_id", &s.bos},     {"tokenizer.ggml.eos_token_id", &s.eos},
      {"tokenizer.ggml.unknown_token_id", &s.unk}, {"tokenizer.ggml.padding_token_id", &s.pad},
      {"tokenizer.ggml.eot_token_id", &s.eot},     {"tokenizer.ggml.eom_token_id", &s.eom},
  };
  for (const auto& [key, id] : keys) {
    if (!vocab.contains(*id)) *id = -1;
    if (!md.contains(key)) continue;
    auto v = md.get_int(key);
    if (!v.is_ok()) return v.status();
    if (*v < 0 || *v >= vocab.size()) {
      log_warn("tokenizer: {} = {} is outside the vocabulary of {} tokens; ignoring it", key, *v,
               vocab.size());
      continue;
    }
    *id = static_cast<int32_t>(*v);
  }
  TS_ASSIGN_OR_RETURN(s.add_bos, md.get_bool_or("tokenizer.ggml.add_bos_token", s.add_bos));
  TS_ASSIGN_OR_RETURN(s.add_eos, md.get_bool_or("tokenizer.ggml.add_eos_token", s.add_eos));
  collect_end_of_generation(vocab, s);
  return s;
}

void collect_end_of_generation(const Vocab& vocab, SpecialTokens& s) {
  // End-of-turn markers of common chat formats; GGUF files often omit eot_token_id.
  static constexpr std::array<std::string_view, 10> kEndMarkers = {
      "<|eot_id|>",
      "<|im_end|>",
      "<|end|>",
      "<end_of_turn>",
      "<|endoftext|>",
      "<|end_of_text|>",
      "<EOT>",
      "<|eom_id|>",
      "<|EOT|>",
      "<\xEF\xBD\x9C"
      "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
  };
  auto& eog = s.end_of_generation;
  eog.clear();
  for (int32_t id : {s.eos, s.eot, s.eom}) {
    if (id >= 0) eog.push_back(id);
  }
  for (std::string_view marker : kEndMarkers) {
    const int32_t id = vocab.find(marker);
    if (id < 0) continue;
    if (s.eot < 0 && marker != "<|eom_id|>") s.eot = id;
    eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
}

}  // namespace tessera::model
