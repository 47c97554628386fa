#include "tessera/model/tokenizer/ugm_tokenizer.h"

#include <algorithm>
#include <cfloat>
#include <limits>

#include "tessera/model/tokenizer/utf8.h"

namespace tessera::model {
namespace {

constexpr double kUnknownPenalty = 10.0;  // SentencePiece's and llama.cpp's
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The best segmentation of the text's first `pos` bytes found so far: its last token, where that
// token starts, and the summed score.
struct Best {
  int32_t id;
  size_t start;
  double score;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> UgmTokenizer::create(const Metadata& md) {
  if (const GgufValue* cm = md.find("tokenizer.ggml.precompiled_charsmap")) {
    const auto arr = cm->as_array();
    if (!arr.is_ok() || !(*arr)->items.empty()) {
      return unsupported("tokenizer.ggml.precompiled_charsmap (SentencePiece's normalization "
                         "table) is not supported by the unigram tokenizer");
    }
  }
  TS_ASSIGN_OR_RETURN(Vocab vocab, read_vocab(md));
  SpecialTokens defaults;
  defaults.eos = 1;
  defaults.unk = 2;
  defaults.pad = 0;
  defaults.add_bos = false;
  defaults.add_eos = true;
  TS_ASSIGN_OR_RETURN(SpecialTokens special, read_special_tokens(md, vocab, defaults));
  TS_ASSIGN_OR_RETURN(bool add_space_prefix,
                      md.get_bool_or("tokenizer.ggml.add_space_prefix", true));
  TS_ASSIGN_OR_RETURN(bool remove_extra,
                      md.get_bool_or("tokenizer.ggml.remove_extra_whitespaces", false));
  return std::unique_ptr<Tokenizer>(new UgmTokenizer(std::move(vocab), std::move(special),
                                                     add_space_prefix, remove_extra));
}

UgmTokenizer::UgmTokenizer(Vocab vocab, SpecialTokens special, bool add_space_prefix,
                           bool remove_extra_whitespaces)
    : SpmTokenizer(std::move(vocab), std::move(special), add_space_prefix),
      add_space_prefix_(add_space_prefix),
      remove_extra_whitespaces_(remove_extra_whitespaces) {
  float min_score = FLT_MAX;
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const TokenAttr a = vocab_.attr(id);
    if (a == TokenAttr::kNormal) min_score = std::min(min_score, vocab_.score(id));
    if (a == TokenAttr::kNormal || a == TokenAttr::kUserDefined || a == TokenAttr::kUnused) {
      max_token_bytes_ = std::max(max_token_bytes_, vocab_.text(id).size());
    }
    if (a == TokenAttr::kUserDefined && !vocab_.text(id).empty()) {
      user_defined_.push_back(vocab_.text(id));
    }
  }
  unknown_score_ = static_cast<double>(min_score) - kUnknownPenalty;
  std::sort(user_defined_.begin(), user_defined_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  byte_fallback_ = true;
  for (int b = 0; b < 256 && byte_fallback_; ++b) {
    byte_fallback_ = vocab_.byte_token(static_cast<uint8_t>(b)) >= 0;
  }
}

std::string UgmTokenizer::normalize(std::string_view in) const {
  std::string out;
  out.reserve(in.size() * 3 + kSpmSpace.size());
  bool prepended = false, in_word = false;
  const auto emit = [&](std::string_view chunk) {
    for (char c : chunk) {
      if (c != ' ') {
        if (!in_word) {
          in_word = true;
          if ((add_space_prefix_ && !prepended) || remove_extra_whitespaces_) {
            out += kSpmSpace;
            prepended = true;
          }
        }
        out += c;
      } else {
        in_word = false;
        if (!remove_extra_whitespaces_) out += kSpmSpace;
      }
    }
  };
  for (size_t pos = 0; pos < in.size();) {
    // A user-defined token passes unchanged (the longest that matches here).
    size_t matched = 0;
    for (const std::string& u : user_defined_) {
      if (in.substr(pos, u.size()) == u) {
        matched = u.size();
        break;
      }
    }
    if (matched > 0) {
      emit(in.substr(pos, matched));
      pos += matched;
      continue;
    }
    const size_t len = utf8_char_length(in, pos);
    if (len == 1 && static_cast<uint8_t>(in[pos]) >= 0x80) {
      emit(kReplacement);  // a malformed byte
    } else {
      emit(in.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

void UgmTokenizer::encode_fragment(std::string_view fragment, bool /*after_special*/,
                                   std::vector<int32_t>& out) const {
  // llama.cpp normalizes every fragment on its own, each with its own space prefix.
  const std::string text = normalize(fragment);
  const size_t n = text.size();
  if (n == 0) return;
  const int32_t unk = special_.unk;
  std::vector<Best> best(n + 1, Best{unk, 0, -std::numeric_limits<double>::max()});
  best[0] = Best{unk, 0, 0.0};
  const std::string_view view(text);
  for (size_t start = 0; start < n;) {
    const size_t char_len = utf8_char_length(view, start);
    const double base = best[start].score;
    bool covered = false;
    const size_t max_len = std::min(max_token_bytes_, n - start);
    for (size_t len = 1; len <= max_len; ++len) {
      const int32_t id = vocab_.find(view.substr(start, len));
      if (id < 0) continue;
      const TokenAttr a = vocab_.attr(id);
      if (a != TokenAttr::kNormal && a != TokenAttr::kUserDefined && a != TokenAttr::kUnused) {
        continue;
      }
      if (len == char_len) covered = true;
      const double score = base + (a == TokenAttr::kUserDefined ? 0.0 : vocab_.score(id));
      if (score > best[start + len].score) best[start + len] = Best{id, start, score};
    }
    if (!covered) {
      // -1 marks "no token covers this character": unknown (or its bytes, with byte fallback).
      const double score = base + unknown_score_;
      if (score > best[start + char_len].score) best[start + char_len] = Best{-1, start, score};
    }
    start += char_len;
  }
  // Backtrack from the end; consecutive unknown characters become one unknown token.
  std::vector<std::pair<int32_t, size_t>> rev;  // (id or -1, start)
  for (size_t end = n;;) {
    const Best& b = best[end];
    rev.emplace_back(b.id, b.start);
    if (b.start == 0) break;
    end = b.start;
  }
  std::reverse(rev.begin(), rev.end());
  bool prev_unknown = false;
  for (size_t i = 0; i < rev.size(); ++i) {
    const auto [id, start] = rev[i];
    const bool unknown = id < 0 || id == unk;
    if (id < 0 && byte_fallback_) {
      const size_t end = i + 1 < rev.size() ? rev[i + 1].second : n;
      for (size_t p = start; p < end; ++p) {
        out.push_back(vocab_.byte_token(static_cast<uint8_t>(text[p])));
      }
      prev_unknown = false;
      continue;
    }
    if (!(unknown && prev_unknown)) {
      const int32_t emit = id < 0 ? unk : id;
      if (emit >= 0) out.push_back(emit);
    }
    prev_unknown = unknown;
  }
}

}  // namespace tessera::model
