#include "tessera/model/tokenizer/pretokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

// PCRE2's header needs the code unit width chosen first: 8 bits, for UTF-8.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tessera/model/tokenizer/utf8.h"

namespace tessera::model {
namespace {

// The expressions, as HuggingFace's tokenizer.json files spell them (PCRE2 reads them as is).
// GPT-2's byte-level split; many vocabularies reuse it.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama 3 (tiktoken cl100k style): case-insensitive contractions, numbers in groups of 3.
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: as Llama 3 but digits one by one.
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Mistral's tekken: words split at lower-to-upper case changes.
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o (o200k) and Llama 4.
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// CJK ideographs (U+4E00..U+9FA5), the block range U+0800..U+4E00 and Hangul syllables, as one run.
constexpr std::string_view kDeepseekCjk =
    R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
// BLOOM and its relatives: words with an optional leading space, split at punctuation.
constexpr std::string_view kBloom =
    R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)";

struct Profile {
  std::vector<std::string_view> names;
  std::vector<std::string_view> patterns;
  PreTokenizer::Traits traits;
};

const std::vector<Profile>& profiles() {
  static const std::vector<Profile> kProfiles = {
      // Used when a BPE vocabulary names no pre-tokenizer.
      {{"default", ""}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}, {}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"},
       {kLlama3},
       {.ignore_merges = true, .add_bos = true}},
      {{"dbrx", "smaug-bpe"}, {kLlama3}, {}},
      {{"chatglm-bpe", "glm4"}, {kLlama3}, {.has_bos = false}},
      {{"deepseek-llm"},
       // \p{L&} is Unicode's cased letters (Lu, Ll, Lt), the class DeepSeek spells out by ranges.
       {R"([\r\n])", R"(\s?\p{L&}+)",
        R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
        R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"},
       {}},
      {{"deepseek-coder"},
       {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"},
       {}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}, {}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2},
       {}},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "mpt", "olmo", "jais"},
       {kGpt2},
       {}},
      {{"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2"}, {kQwen2}, {}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kBloom}, {}},
      {{"viking"}, {kBloom, R"(\p{N})"}, {}},
      {{"tekken"}, {kTekken}, {.ignore_merges = true, .add_bos = true}},
      {{"gpt-4o", "llama4"}, {kGpt4o}, {}},
      {{"chameleon"},
       {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
        R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2},
       {.add_bos = true}},
  };
  return kProfiles;
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};
using MatchData = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

}  // namespace

class PreTokenizer::Regex {
 public:
  static Result<std::shared_ptr<const Regex>> compile(std::string_view pattern) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error,
                                     &error_offset, nullptr);
    if (code == nullptr) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(error, message.data(), message.size());
      return invalid_argument(
          fmt::format("pre-tokenizer pattern '{}' does not compile at offset {}: {}", pattern,
                      error_offset, reinterpret_cast<const char*>(message.data())));
    }
    // JIT makes matching several times faster; without it (unsupported CPU) PCRE2 interprets.
    const bool jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return std::shared_ptr<const Regex>(new Regex(code, jit));
  }

  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  MatchData make_match_data() const {
    return MatchData(pcre2_match_data_create_from_pattern(code_, nullptr));
  }

  // Appends to `out` the pieces of `text`: each match, and each stretch between matches.
  void split(std::string_view text, pcre2_match_data* md,
             std::vector<std::string_view>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t last = 0;    // end of the last piece emitted
    size_t offset = 0;  // where the next search starts
    while (offset < text.size()) {
      int rc = pcre2_match(code_, subject, text.size(), offset, 0, md, nullptr);
      if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && jit_) {
        // The JIT stack is small; a very long match may not fit. The interpreter has no such limit.
        rc = pcre2_match(code_, subject, text.size(), offset, PCRE2_NO_JIT, md, nullptr);
      }
      if (rc < 0) break;  // no match, or a resource limit: the rest stays one piece
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t start = std::max<size_t>(ov[0], last);
      const size_t end = ov[1];
      if (end <= start) {  // an empty match: step over one character and search again
        offset = std::max(offset, start);
        if (offset >= text.size()) break;
        offset += utf8_char_length(text, offset);
        continue;
      }
      if (start > last) out.push_back(text.substr(last, start - last));
      out.push_back(text.substr(start, end - start));
      last = offset = end;
    }
    if (last < text.size()) out.push_back(text.substr(last));
  }

 private:
  Regex(pcre2_code* code, bool jit) : code_(code), jit_(jit) {}
  pcre2_code* code_;
  bool jit_;
};

Result<PreTokenizer> PreTokenizer::create(std::string_view name) {
  for (const Profile& p : profiles()) {
    for (std::string_view n : p.names) {
      if (n != name) continue;
      std::vector<std::string> patterns(p.patterns.begin(), p.patterns.end());
      return from_patterns(patterns, p.traits);
    }
  }
  return unsupported(fmt::format(
      "pre-tokenizer '{}' (tokenizer.ggml.pre) is not supported; known ones include llama-bpe, "
      "qwen2, gpt-2, starcoder, falcon, deepseek-coder, smollm",
      name));
}

std::string_view PreTokenizer::name_for(const std::vector<std::string>& patterns,
                                         bool ignore_merges) {
  for (const Profile& p : profiles()) {
    if (p.traits.ignore_merges != ignore_merges || p.patterns.size() != patterns.size()) continue;
    if (std::equal(p.patterns.begin(), p.patterns.end(), patterns.begin())) return p.names[0];
  }
  return {};
}

std::string_view PreTokenizer::gpt2_pattern() { return kGpt2; }

Result<PreTokenizer> PreTokenizer::from_patterns(const std::vector<std::string>& patterns,
                                                 Traits traits) {
  PreTokenizer p;
  p.traits_ = traits;
  for (const std::string& pattern : patterns) {
    TS_ASSIGN_OR_RETURN(auto regex, Regex::compile(pattern));
    p.regexes_.push_back(std::move(regex));
  }
  return p;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    MatchData md = regex->make_match_data();
    TS_CHECK_MSG(md != nullptr, "out of memory allocating PCRE2 match data");
    next.clear();
    for (std::string_view piece : pieces) regex->split(piece, md.get(), next);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace tessera::model
