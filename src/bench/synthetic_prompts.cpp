#include "tessera/bench/synthetic_prompts.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

namespace tessera::bench {
namespace {

// Each is one token, with its leading space, in Llama 2's SentencePiece and GPT-2-style BPE.
constexpr std::string_view kWords[] = {
    " the", " of", " and", " to", " in", " is", " was", " that", " for", " it", " with", " as",
    " on", " be", " at", " by", " this", " had", " not", " are", " but", " from", " or", " have",
    " an", " they", " which", " one", " you", " were", " all", " her", " she", " there", " would",
    " their", " we", " him", " been", " has", " when", " who", " will", " no", " more", " if",
    " out", " so", " up", " said", " what", " its", " about", " than", " into", " them", " can",
    " only", " other", " time", " new", " some", " could", " these", " two", " may", " first",
    " then", " do", " any", " like", " my", " now", " over", " such", " our", " man", " me",
    " even", " most", " made", " after", " also", " did", " many", " before", " must", " well",
    " back", " through", " years", " much", " where", " your", " way", " down", " should",
    " because", " long", " each", " just", " people", " those", " how", " little", " good",
    " world", " make", " very", " year", " still", " see", " own", " work", " day", " get",
    " here", " between", " both", " life", " being", " under", " never"};

Result<double> number(std::string_view s) {
  const std::string str(s);
  char* end = nullptr;
  const double v = std::strtod(str.c_str(), &end);
  if (str.empty() || *end != '\0' || !std::isfinite(v)) {
    return invalid_argument("'" + str + "' is not a number");
  }
  return v;
}

}  // namespace

Result<LengthSpec> parse_length_spec(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  for (;;) {
    const size_t c = text.find(':', pos);
    parts.push_back(text.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  auto bad = [&](const std::string& why) {
    return invalid_argument("bad length '" + std::string(text) + "': " + why +
                            " (expected N, fixed:N, uniform:LO:HI, normal:MEAN:STD or exp:MEAN)");
  };
  LengthSpec s;
  std::vector<double> v;
  const size_t first = parts.size() == 1 ? 0 : 1;
  for (size_t i = first; i < parts.size(); ++i) {
    auto x = number(parts[i]);
    if (!x.is_ok()) return bad(x.status().message());
    v.push_back(*x);
  }
  const std::string_view kind = parts.size() == 1 ? "fixed" : parts[0];
  if (kind == "fixed" && v.size() == 1) {
    s = {LengthDist::kFixed, v[0], 0};
  } else if (kind == "uniform" && v.size() == 2) {
    s = {LengthDist::kUniform, v[0], v[1]};
    if (v[1] < v[0]) return bad("HI < LO");
  } else if (kind == "normal" && v.size() == 2) {
    s = {LengthDist::kNormal, v[0], v[1]};
    if (v[1] < 0) return bad("negative standard deviation");
  } else if ((kind == "exp" || kind == "exponential") && v.size() == 1) {
    s = {LengthDist::kExponential, v[0], 0};
  } else {
    return bad("unknown form");
  }
  if (!(s.a >= 1)) return bad("lengths must be >= 1");
  return s;
}

std::string format_length_spec(const LengthSpec& s) {
  char buf[96];
  switch (s.dist) {
    case LengthDist::kFixed: std::snprintf(buf, sizeof buf, "%g", s.a); break;
    case LengthDist::kUniform: std::snprintf(buf, sizeof buf, "uniform:%g:%g", s.a, s.b); break;
    case LengthDist::kNormal: std::snprintf(buf, sizeof buf, "normal:%g:%g", s.a, s.b); break;
    case LengthDist::kExponential: std::snprintf(buf, sizeof buf, "exp:%g", s.a); break;
  }
  return buf;
}

int32_t draw_length(const LengthSpec& s, Rng& rng) {
  double x = s.a;
  switch (s.dist) {
    case LengthDist::kFixed: break;
    case LengthDist::kUniform:
      x = std::floor(s.a + rng.uniform() * (s.b - s.a + 1));
      break;
    case LengthDist::kNormal: x = std::round(s.a + s.b * rng.normal()); break;
    case LengthDist::kExponential: x = std::round(-s.a * std::log(1.0 - rng.uniform())); break;
  }
  return static_cast<int32_t>(std::clamp(x, 1.0, 1e9));
}

namespace {

// True when `s` is complete, well-formed UTF-8 (no stray continuation bytes, no cut sequences).
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 1;
    if (c >= 0xF0 && c <= 0xF4) len = 4;
    else if (c >= 0xE0) len = 3;
    else if (c >= 0xC2) len = 2;
    else if (c >= 0x80) return false;
    if (c >= 0xF5 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

PromptSynthesizer::PromptSynthesizer(const model::Tokenizer* tokenizer) : tokenizer_(tokenizer) {
  if (!tokenizer_) return;
  for (int32_t id = 0; id < tokenizer_->n_vocab(); ++id) {
    if (id == tokenizer_->bos_id() || tokenizer_->is_end_of_generation(id)) continue;
    const std::string piece = tokenizer_->token_to_piece(id);
    if (piece.empty()) continue;  // control tokens
    // Byte tokens (<0x80>..<0xFF>) alone are not text: a prompt made of them could not be sent
    // as JSON. Whole-character tokens keep every prompt valid UTF-8.
    if (!valid_utf8(piece)) continue;
    pool_.push_back(id);
  }
}

void PromptSynthesizer::begin(QuerySample& s) const {
  s.prompt.clear();
  s.tokens.clear();
  if (tokenizer_ && tokenizer_->bos_id() >= 0) s.tokens.push_back(tokenizer_->bos_id());
}

void PromptSynthesizer::append(int32_t n, Rng& rng, QuerySample& s) const {
  for (int32_t i = 0; i < n; ++i) {
    const uint64_t r = rng.next_u64();
    if (!pool_.empty()) {
      s.tokens.push_back(pool_[r % pool_.size()]);
    } else {
      s.prompt += kWords[r % std::size(kWords)];
    }
  }
}

void PromptSynthesizer::finish(QuerySample& s) const {
  if (tokenizer_) {
    s.prompt = tokenizer_->decode(s.tokens);
    s.input_tokens = static_cast<int32_t>(s.tokens.size());
  } else {
    // Every word is one token; the server's usage gives the exact count.
    int32_t n = 0;
    for (char c : s.prompt) n += c == ' ';
    s.input_tokens = n;
  }
}

QuerySample PromptSynthesizer::make(int32_t n_input, int32_t max_output, Rng& rng) const {
  QuerySample s;
  begin(s);
  append(n_input - static_cast<int32_t>(s.tokens.size()), rng, s);
  finish(s);
  s.max_output_tokens = max_output;
  return s;
}

InMemoryLibrary make_synthetic_library(const SyntheticOptions& o, const PromptSynthesizer& synth) {
  InMemoryLibrary lib;
  Rng rng(o.seed ^ 0x9d2c5680u);
  for (int64_t i = 0; i < o.n_prompts; ++i) {
    const int32_t in = draw_length(o.input_len, rng);
    const int32_t out = draw_length(o.output_len, rng);
    lib.add(synth.make(in, out, rng));
  }
  return lib;
}

Result<InMemoryLibrary> load_prompt_file(const std::string& path, const LengthSpec& default_output,
                                         uint64_t seed, const model::Tokenizer* tokenizer) {
  std::ifstream in(path);
  if (!in) return not_found("cannot open prompt file " + path);
  InMemoryLibrary lib;
  Rng rng(seed ^ 0x4f1bbcdcu);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    QuerySample s;
    try {
      const auto j = nlohmann::json::parse(line);
      if (j.contains("prompt")) {
        s.prompt = j.at("prompt").get<std::string>();
      } else {
        s.prompt = j.at("text").get<std::string>();
      }
      s.max_output_tokens = draw_length(default_output, rng);
      for (const char* k : {"max_tokens", "output_len", "max_output_tokens"}) {
        if (j.contains(k)) s.max_output_tokens = j.at(k).get<int32_t>();
      }
    } catch (const std::exception& e) {
      return corrupt_data(path + ":" + std::to_string(n) +
                          ": expected a JSON object with \"prompt\" (string) and optionally "
                          "\"max_tokens\" (integer): " + e.what());
    }
    if (s.max_output_tokens < 1) {
      return corrupt_data(path + ":" + std::to_string(n) + ": max_tokens must be >= 1");
    }
    if (tokenizer) {
      s.tokens = tokenizer->encode(s.prompt, /*add_special=*/true, /*parse_special=*/false);
      s.input_tokens = static_cast<int32_t>(s.tokens.size());
    } else {
      // An estimate (about 4 bytes a token); the server's usage gives the exact count.
      s.input_tokens = static_cast<int32_t>((s.prompt.size() + 3) / 4);
    }
    lib.add(std::move(s));
  }
  if (lib.size() == 0) return corrupt_data(path + ": no prompts");
  return lib;
}

}  // namespace tessera::bench
