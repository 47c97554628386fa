#include "tessera/model/tokenizer/hf_tokenizer_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "tessera/model/tokenizer/pretokenizer.h"

namespace tessera::model {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxTokens = int64_t{1} << 24;
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581

// GGUF token types (llama.cpp's llama_token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

Status bad(std::string_view what) { return corrupt_data(fmt::format("tokenizer.json: {}", what)); }
Status refuse(std::string_view what) { return unsupported(fmt::format("tokenizer.json: {}", what)); }

const Json* member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string type_of(const Json& j) {
  const Json* t = member(j, "type");
  return t != nullptr && t->is_string() ? t->get<std::string>() : std::string();
}

bool bool_member(const Json& j, const char* key, bool fallback) {
  const Json* v = member(j, key);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

struct Table {
  std::vector<std::string> tokens;
  std::vector<bool> present;
  std::vector<int32_t> types;
  std::unordered_map<std::string, int32_t> ids;
};

Status put(Table& t, int64_t id, std::string text, int32_t type, bool allow_same) {
  if (id < 0 || id >= kMaxTokens) return bad(fmt::format("token id {} is out of range", id));
  const auto i = static_cast<size_t>(id);
  if (i >= t.tokens.size()) {
    t.tokens.resize(i + 1);
    t.present.resize(i + 1, false);
    t.types.resize(i + 1, kUnused);
  }
  if (t.present[i]) {
    if (!allow_same || t.tokens[i] != text) {
      return bad(fmt::format("id {} is given to both '{}' and '{}'", id, t.tokens[i], text));
    }
  }
  t.present[i] = true;
  t.ids[text] = static_cast<int32_t>(id);
  t.tokens[i] = std::move(text);
  t.types[i] = type;
  return Status::ok();
}

// "a b" or ["a", "b"] -> (a, b).
Result<std::pair<std::string, std::string>> read_merge(const Json& m, size_t index) {
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    const size_t space = s.find(' ', 1);
    if (space == std::string::npos || space + 1 >= s.size() || s.find(' ', space + 1) != std::string::npos) {
      return bad(fmt::format("merges[{}] is '{}', expected two tokens separated by one space",
                             index, s));
    }
    return std::pair{s.substr(0, space), s.substr(space + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string() &&
      !m[0].get_ref<const std::string&>().empty() && !m[1].get_ref<const std::string&>().empty()) {
    return std::pair{m[0].get<std::string>(), m[1].get<std::string>()};
  }
  return bad(fmt::format("merges[{}] is {}, expected \"a b\" or [\"a\", \"b\"]", index,
                         m.dump().substr(0, 80)));
}

// The byte-level pre-tokenizer's expressions, in order; refuses what GGUF cannot name.
Result<std::vector<std::string>> byte_level_patterns(const Json& pre) {
  std::vector<const Json*> steps;
  if (type_of(pre) == "Sequence") {
    const Json* list = member(pre, "pretokenizers");
    if (list == nullptr || !list->is_array()) return bad("a Sequence pre-tokenizer has no list");
    for (const Json& s : *list) steps.push_back(&s);
  } else {
    steps.push_back(&pre);
  }
  std::vector<std::string> patterns;
  bool byte_level = false;
  for (const Json* s : steps) {
    const std::string type = type_of(*s);
    if (byte_level) return refuse(fmt::format("a {} pre-tokenizer after ByteLevel is not supported", type));
    if (type == "ByteLevel") {
      if (bool_member(*s, "add_prefix_space", false)) {
        return refuse("ByteLevel with add_prefix_space is not supported");
      }
      if (bool_member(*s, "use_regex", true)) patterns.emplace_back(PreTokenizer::gpt2_pattern());
      byte_level = true;
    } else if (type == "Split") {
      const Json* pattern = member(*s, "pattern");
      const Json* regex = pattern != nullptr ? member(*pattern, "Regex") : nullptr;
      const Json* behavior = member(*s, "behavior");
      if (regex == nullptr || !regex->is_string()) {
        return refuse("a Split pre-tokenizer without a Regex pattern is not supported");
      }
      if (behavior == nullptr || !behavior->is_string() || behavior->get<std::string>() != "Isolated" ||
          bool_member(*s, "invert", false)) {
        return refuse("a Split pre-tokenizer other than behavior Isolated, invert false is not supported");
      }
      patterns.push_back(regex->get<std::string>());
    } else if (type == "Digits") {
      patterns.emplace_back(bool_member(*s, "individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    } else {
      return refuse(fmt::format("pre-tokenizer '{}' is not supported with byte-level BPE",
                                type.empty() ? s->dump().substr(0, 60) : type));
    }
  }
  if (!byte_level) return refuse("byte-level BPE without a ByteLevel pre-tokenizer");
  return patterns;
}

// Whether text is split SentencePiece-style (spaces as U+2581) and the prefix flag; refuses
// any other normalizer / pre-tokenizer combination.
Result<bool> spm_space_prefix(const Json* normalizer, const Json* pre) {
  if (normalizer != nullptr) {
    if (pre != nullptr) return refuse("a normalizer together with a pre-tokenizer is not supported with a SentencePiece-style (byte_fallback BPE or Unigram) tokenizer");
    std::vector<const Json*> steps;
    if (type_of(*normalizer) == "Sequence") {
      const Json* list = member(*normalizer, "normalizers");
      if (list == nullptr || !list->is_array()) return bad("a Sequence normalizer has no list");
      for (const Json& s : *list) steps.push_back(&s);
    } else {
      steps.push_back(normalizer);
    }
    bool prefix = false, replace = false;
    for (const Json* s : steps) {
      const std::string type = type_of(*s);
      const Json* content = member(*s, "content");
      const Json* pattern = member(*s, "pattern");
      const Json* str = pattern != nullptr ? member(*pattern, "String") : nullptr;
      const Json* prepend = member(*s, "prepend");
      if (type == "Prepend" && !replace && prepend != nullptr && prepend->is_string() &&
          prepend->get<std::string>() == kSpmSpace) {
        prefix = true;
      } else if (type == "Replace" && str != nullptr && str->is_string() && str->get<std::string>() == " " &&
                 content != nullptr && content->is_string() && content->get<std::string>() == kSpmSpace) {
        replace = true;
      } else {
        return refuse(fmt::format("normalizer '{}' is not supported (Prepend \"\u2581\" and "
                                  "Replace \" \" -> \"\u2581\" are)", type));
      }
    }
    if (!replace) return refuse("a SentencePiece-style tokenizer whose normalizer does not turn spaces into \u2581");
    return prefix;
  }
  if (pre == nullptr || type_of(*pre) != "Metaspace") {
    return refuse(fmt::format("a SentencePiece-style tokenizer (byte_fallback BPE or Unigram) with pre-tokenizer '{}' is not supported "
                              "(Metaspace is)", pre == nullptr ? "none" : type_of(*pre)));
  }
  const Json* repl = member(*pre, "replacement");
  if (repl == nullptr || !repl->is_string() || repl->get<std::string>() != kSpmSpace) {
    return refuse("a Metaspace pre-tokenizer whose replacement is not \u2581");
  }
  if (bool_member(*pre, "split", true)) {
    return refuse("a Metaspace pre-tokenizer with split=true is not supported");
  }
  const Json* scheme = member(*pre, "prepend_scheme");
  if (scheme != nullptr) {
    if (!scheme->is_string()) return bad("Metaspace prepend_scheme is not a string");
    const std::string s = scheme->get<std::string>();
    if (s != "first" && s != "always" && s != "never") {
      return refuse(fmt::format("Metaspace prepend_scheme '{}'", s));
    }
    return s != "never";
  }
  return bool_member(*pre, "add_prefix_space", true);
}

// SentencePiece's byte-fallback spelling "<0xXX>".
bool is_byte_piece(std::string_view text) {
  return text.size() == 6 && text.substr(0, 3) == "<0x" && text[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(text[3])) &&
         std::isxdigit(static_cast<unsigned char>(text[4]));
}

// A Unigram model's space handling: that of spm_space_prefix, where a splitting Metaspace is
// also accepted when no piece holds a "▁" after its first character (then Viterbi over the
// whole text, as GGUF's unigram tokenizer runs it, equals Viterbi word by word). A Precompiled
// normalizer (SentencePiece's charsmap) is refused by name.
Result<bool> unigram_space_prefix(const Json* normalizer, const Json* pre, const Json& vocab) {
  if (normalizer != nullptr) {
    std::vector<const Json*> steps{normalizer};
    if (type_of(*normalizer) == "Sequence") {
      const Json* list = member(*normalizer, "normalizers");
      if (list == nullptr || !list->is_array()) return bad("a Sequence normalizer has no list");
      steps.clear();
      for (const Json& s : *list) steps.push_back(&s);
    }
    for (const Json* s : steps) {
      if (type_of(*s) == "Precompiled") {
        return refuse("a Unigram model with a Precompiled normalizer (SentencePiece's "
                      "precompiled_charsmap) is not supported");
      }
    }
    if (pre == nullptr) return spm_space_prefix(normalizer, nullptr);
    return refuse(fmt::format("a Unigram model with normalizer '{}' and pre-tokenizer '{}' is not "
                              "supported (a Metaspace pre-tokenizer alone, or a Prepend/Replace "
                              "normalizer alone, is)", type_of(*normalizer), type_of(*pre)));
  }
  if (pre != nullptr && type_of(*pre) == "Metaspace" && bool_member(*pre, "split", true)) {
    for (size_t i = 0; i < vocab.size(); ++i) {
      const Json& e = vocab[i];
      if (!e.is_array() || e.empty() || !e[0].is_string()) continue;  // reported later
      const std::string& piece = e[0].get_ref<const std::string&>();
      if (piece.find(kSpmSpace, 1) != std::string::npos) {
        return refuse(fmt::format("a splitting Metaspace pre-tokenizer with the piece '{}', which "
                                  "holds \u2581 after its start, is not supported", piece));
      }
    }
    Json unsplit = *pre;
    unsplit["split"] = false;
    return spm_space_prefix(nullptr, &unsplit);
  }
  return spm_space_prefix(nullptr, pre);
}

// The id of a tokenizer_config.json *_token entry ("<s>" or {"content": "<s>", ...}).
std::optional<int32_t> config_token(const Json& cfg, const char* key, const Table& t) {
  const Json* v = member(cfg, key);
  if (v != nullptr && v->is_object()) v = member(*v, "content");
  if (v == nullptr || !v->is_string()) return std::nullopt;
  const auto it = t.ids.find(v->get<std::string>());
  if (it == t.ids.end()) return std::nullopt;
  return it->second;
}

// Whether the post-processor's single-sequence template starts (front) or ends with `id`.
bool template_adds(const Json* post, const Table& t, int32_t id, bool front) {
  if (post == nullptr || id < 0) return false;
  if (type_of(*post) == "Sequence") {
    const Json* list = member(*post, "processors");
    if (list == nullptr || !list->is_array()) return false;
    for (const Json& p : *list) {
      if (template_adds(&p, t, id, front)) return true;
    }
    return false;
  }
  if (type_of(*post) != "TemplateProcessing") return false;
  const Json* single = member(*post, "single");
  if (single == nullptr || !single->is_array() || single->empty()) return false;
  const Json& piece = front ? single->front() : single->back();
  const Json* special = member(piece, "SpecialToken");
  const Json* sid = special != nullptr ? member(*special, "id") : nullptr;
  if (sid == nullptr || !sid->is_string()) return false;
  const auto it = t.ids.find(sid->get<std::string>());
  return it != t.ids.end() && it->second == id;
}

GgufValue string_array(const std::vector<std::string>& v) {
  GgufArray a{GgufType::kString, {}};
  a.items.reserve(v.size());
  for (const auto& s : v) a.items.push_back(GgufValue::string(s));
  return GgufValue::array(std::move(a));
}

}  // namespace

Result<Metadata> hf_tokenizer_to_gguf(const HfTokenizerInputs& in) {
  const Json j = Json::parse(in.tokenizer_json.begin(), in.tokenizer_json.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  Json cfg = Json::object();
  if (!in.tokenizer_config_json.empty()) {
    cfg = Json::parse(in.tokenizer_config_json.begin(), in.tokenizer_config_json.end(), nullptr, false);
    if (cfg.is_discarded() || !cfg.is_object()) {
      return corrupt_data("tokenizer_config.json is not a JSON object");
    }
  }
  const Json* model = member(j, "model");
  if (model == nullptr || !model->is_object()) return bad("no 'model' object");
  const std::string model_type = type_of(*model);
  if (model_type != "BPE" && model_type != "Unigram") {
    return refuse(fmt::format("tokenizer model '{}' is not supported (BPE and Unigram are; "
                              "WordPiece and WordLevel are not yet)",
                              model_type.empty() ? "?" : model_type));
  }
  const bool unigram = model_type == "Unigram";
  const bool byte_fallback = bool_member(*model, "byte_fallback", false);
  const bool ignore_merges = bool_member(*model, "ignore_merges", false);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json* v = member(*model, key);
    if (!unigram && v != nullptr && !(v->is_string() && v->get<std::string>().empty())) {
      return refuse(fmt::format("BPE '{}' is not supported", key));
    }
  }
  const Json* normalizer = member(j, "normalizer");
  const Json* pre = member(j, "pre_tokenizer");

  Metadata md;
  bool spm = false;
  if (unigram) {
    const Json* vocab = member(*model, "vocab");
    if (vocab == nullptr || !vocab->is_array()) return bad("a Unigram model.vocab must be a list");
    TS_ASSIGN_OR_RETURN(const bool prefix, unigram_space_prefix(normalizer, pre, *vocab));
    md.set("tokenizer.ggml.model", GgufValue::string("t5"));
    md.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(prefix));
    md.set("tokenizer.ggml.remove_extra_whitespaces", GgufValue::boolean(false));
    spm = true;
  } else if (byte_fallback) {
    if (ignore_merges) return refuse("byte_fallback BPE with ignore_merges is not supported");
    TS_ASSIGN_OR_RETURN(const bool prefix, spm_space_prefix(normalizer, pre));
    md.set("tokenizer.ggml.model", GgufValue::string("llama"));
    md.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(prefix));
    spm = true;
  } else {
    if (normalizer != nullptr && type_of(*normalizer) != "NFC") {
      return refuse(fmt::format("normalizer '{}' is not supported with byte-level BPE (none or "
                                "NFC is)", type_of(*normalizer)));
    }
    if (pre == nullptr) return refuse("BPE without a pre-tokenizer or byte_fallback is not supported");
    TS_ASSIGN_OR_RETURN(const std::vector<std::string> patterns, byte_level_patterns(*pre));
    const std::string_view name = PreTokenizer::name_for(patterns, ignore_merges);
    if (name.empty()) {
      std::string quoted;
      for (const auto& p : patterns) quoted += fmt::format(" '{}'", p);
      return refuse(fmt::format("no known pre-tokenizer splits by{} (ignore_merges {}); it "
                                "would need its own entry in pretokenizer.cpp",
                                quoted.empty() ? " nothing" : quoted, ignore_merges));
    }
    md.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
    md.set("tokenizer.ggml.pre", GgufValue::string(std::string(name)));
  }

  // The token table: the model's vocabulary, then the added tokens.
  Table t;
  const Json* vocab = member(*model, "vocab");
  std::vector<float> unigram_scores;  // by id
  if (unigram) {
    if (vocab->empty()) return bad("model.vocab is empty");
    for (size_t i = 0; i < vocab->size(); ++i) {
      const Json& e = (*vocab)[i];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number() ||
          e[0].get_ref<const std::string&>().empty() || !std::isfinite(e[1].get<double>())) {
        return bad(fmt::format("model.vocab[{}] is {}, expected [\"piece\", score]", i,
                               e.dump().substr(0, 80)));
      }
      const std::string& text = e[0].get_ref<const std::string&>();
      TS_RETURN_IF_ERROR(put(t, static_cast<int64_t>(i), text,
                             byte_fallback && is_byte_piece(text) ? kByte : kNormal, false));
      unigram_scores.push_back(static_cast<float>(e[1].get<double>()));
    }
    if (const Json* unk = member(*model, "unk_id")) {
      if (!unk->is_number_integer() || unk->get<int64_t>() < 0 ||
          unk->get<int64_t>() >= static_cast<int64_t>(vocab->size())) {
        return bad(fmt::format("model.unk_id {} is not an id of the vocabulary", unk->dump()));
      }
    }
  } else {
  if (vocab == nullptr || !vocab->is_object() || vocab->empty()) return bad("model.vocab must be a non-empty object");
  for (const auto& [text, id] : vocab->items()) {
    if (!id.is_number_integer()) return bad(fmt::format("vocab['{}'] is not an integer id", text));
    if (text.empty()) return bad("the vocabulary has an empty token");
    const int32_t type = spm && is_byte_piece(text) ? kByte : kNormal;
    TS_RETURN_IF_ERROR(put(t, id.get<int64_t>(), text, type, false));
  }
  }
  if (const Json* added = member(j, "added_tokens")) {
    if (!added->is_array()) return bad("'added_tokens' is not a list");
    for (const Json& a : *added) {
      const Json* id = member(a, "id");
      const Json* content = member(a, "content");
      if (id == nullptr || !id->is_number_integer() || content == nullptr || !content->is_string() ||
          content->get_ref<const std::string&>().empty()) {
        return bad(fmt::format("added token {} needs an integer 'id' and a non-empty 'content'",
                               a.dump().substr(0, 80)));
      }
      const int32_t type = bool_member(a, "special", false) ? kControl : kUserDefined;
      TS_RETURN_IF_ERROR(put(t, id->get<int64_t>(), content->get<std::string>(), type, true));
    }
  }
  if (const Json* unk = unigram ? member(*model, "unk_id") : nullptr) {
    const auto id = static_cast<size_t>(unk->get<int64_t>());  // checked above
    t.types[id] = kUnknown;
    md.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(static_cast<uint32_t>(id)));
  }
  if (const Json* unk = unigram ? nullptr : member(*model, "unk_token")) {
    if (!unk->is_string()) return bad("model.unk_token is not a string");
    const auto it = t.ids.find(unk->get<std::string>());
    if (it != t.ids.end()) {
      t.types[static_cast<size_t>(it->second)] = kUnknown;
      md.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(static_cast<uint32_t>(it->second)));
    }
  }
  const int64_t n_tokens = static_cast<int64_t>(t.tokens.size());
  if (in.n_vocab_rows > 0 && n_tokens > in.n_vocab_rows) {
    return corrupt_data(fmt::format("tokenizer.json has {} tokens but the model's embedding only "
                                    "{} rows", n_tokens, in.n_vocab_rows));
  }
  const int64_t n_total = std::max(n_tokens, in.n_vocab_rows);
  t.tokens.resize(static_cast<size_t>(n_total));
  t.present.resize(static_cast<size_t>(n_total), false);
  t.types.resize(static_cast<size_t>(n_total), kUnused);
  for (int64_t i = 0; i < n_total; ++i) {
    if (!t.present[static_cast<size_t>(i)]) t.tokens[static_cast<size_t>(i)] = fmt::format("[PAD{}]", i);
  }

  // Merges: as GGUF strings for byte-level BPE; as scores for the SentencePiece form. Unigram
  // has its scores (0 for the padding rows and added tokens past the vocabulary).
  static const Json kNoMerges = Json::array();
  const Json* merges = unigram ? &kNoMerges : member(*model, "merges");
  if (merges == nullptr || !merges->is_array()) return bad("model.merges must be a list");
  std::vector<std::string> merge_strings;
  std::vector<float> scores;
  if (spm) {
    // Every token no merge produces ranks below all merges, keeping the vocabulary's order.
    const auto n_merges = static_cast<double>(merges->size());
    scores.resize(static_cast<size_t>(n_total));
    for (int64_t i = 0; i < n_total; ++i) {
      scores[static_cast<size_t>(i)] = t.types[static_cast<size_t>(i)] == kNormal
                                           ? static_cast<float>(-(n_merges + static_cast<double>(i)))
                                           : 0.0f;
    }
  }
  if (unigram) {
    scores = unigram_scores;
    scores.resize(static_cast<size_t>(n_total), 0.0f);
  }
  std::vector<bool> merged(spm ? static_cast<size_t>(n_total) : 0, false);
  for (size_t r = 0; r < merges->size(); ++r) {
    TS_ASSIGN_OR_RETURN(const auto m, read_merge((*merges)[r], r));
    if (!spm) {
      if (m.first.find(' ') != std::string::npos || m.second.find(' ') != std::string::npos) {
        return refuse(fmt::format("merges[{}] joins tokens containing a space, which GGUF merges "
                                  "cannot spell", r));
      }
      merge_strings.push_back(m.first + " " + m.second);
      continue;
    }
    const auto it = t.ids.find(m.first + m.second);
    if (it == t.ids.end()) continue;  // merges into no token: never applied
    const auto id = static_cast<size_t>(it->second);
    if (!merged[id]) {
      merged[id] = true;
      scores[id] = -static_cast<float>(r);
    }
  }

  md.set("tokenizer.ggml.tokens", string_array(t.tokens));
  if (spm) {
    GgufArray s{GgufType::kFloat32, {}};
    for (float x : scores) s.items.push_back(GgufValue::f32(x));
    md.set("tokenizer.ggml.scores", GgufValue::array(std::move(s)));
  }
  GgufArray types{GgufType::kInt32, {}};
  for (int32_t x : t.types) types.items.push_back(GgufValue::i32(x));
  md.set("tokenizer.ggml.token_type", GgufValue::array(std::move(types)));
  if (!spm) md.set("tokenizer.ggml.merges", string_array(merge_strings));

  // Special ids: tokenizer_config.json's tokens, else config.json's ids.
  const auto id_in_range = [&](int64_t id) { return id >= 0 && id < n_total; };
  std::optional<int32_t> bos = config_token(cfg, "bos_token", t);
  std::optional<int32_t> eos = config_token(cfg, "eos_token", t);
  std::optional<int32_t> pad = config_token(cfg, "pad_token", t);
  if (const auto unk = config_token(cfg, "unk_token", t)) {
    md.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(static_cast<uint32_t>(*unk)));
  }
  if (!bos && in.bos_token_id && id_in_range(*in.bos_token_id)) bos = static_cast<int32_t>(*in.bos_token_id);
  if (!eos && !in.eos_token_ids.empty() && id_in_range(in.eos_token_ids[0])) {
    eos = static_cast<int32_t>(in.eos_token_ids[0]);
  }
  if (!pad && in.pad_token_id && id_in_range(*in.pad_token_id)) pad = static_cast<int32_t>(*in.pad_token_id);
  if (bos) md.set("tokenizer.ggml.bos_token_id", GgufValue::u32(static_cast<uint32_t>(*bos)));
  if (eos) md.set("tokenizer.ggml.eos_token_id", GgufValue::u32(static_cast<uint32_t>(*eos)));
  if (pad) md.set("tokenizer.ggml.padding_token_id", GgufValue::u32(static_cast<uint32_t>(*pad)));
  const Json* post = member(j, "post_processor");
  const Json* add_bos = member(cfg, "add_bos_token");
  const Json* add_eos = member(cfg, "add_eos_token");
  md.set("tokenizer.ggml.add_bos_token",
         GgufValue::boolean(add_bos != nullptr && add_bos->is_boolean()
                                ? add_bos->get<bool>()
                                : template_adds(post, t, bos.value_or(-1), true)));
  md.set("tokenizer.ggml.add_eos_token",
         GgufValue::boolean(add_eos != nullptr && add_eos->is_boolean()
                                ? add_eos->get<bool>()
                                : template_adds(post, t, eos.value_or(-1), false)));
  if (const Json* tpl = member(cfg, "chat_template")) {
    if (tpl->is_string()) {
      md.set("tokenizer.chat_template", GgufValue::string(tpl->get<std::string>()));
    } else if (tpl->is_array()) {  // named templates: the default one
      for (const Json& x : *tpl) {
        const Json* name = member(x, "name");
        const Json* text = member(x, "template");
        if (name != nullptr && name->is_string() && name->get<std::string>() == "default" &&
            text != nullptr && text->is_string()) {
          md.set("tokenizer.chat_template", GgufValue::string(text->get<std::string>()));
        }
      }
    }
  }
  return md;
}

}  // namespace tessera::model
