#include "tessera/engine/gbnf_grammar.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "tessera/engine/gbnf_matcher.h"

namespace tessera::engine {

namespace gbnf_compile {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

uint32_t utf8_bytes(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

uint32_t add_bytes(uint32_t a, uint32_t b) { return std::min(a + b, GbnfGrammar::kNever); }

// Sorted, merged, surrogates removed.
Ranges normalize(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges merged;
  for (const auto& [lo, hi] : r) {
    if (!merged.empty() && lo <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.emplace_back(lo, hi);
    }
  }
  Ranges out;
  for (const auto& [lo, hi] : merged) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.emplace_back(lo, hi);
      continue;
    }
    if (lo < 0xD800) out.emplace_back(lo, 0xD7FF);
    if (hi > 0xDFFF) out.emplace_back(0xE000, hi);
  }
  return out;
}

Ranges complement(const Ranges& r) {
  Ranges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : r) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return normalize(out);
}

// Parses the text into rules of elements (repetitions and groups as generated rules), then checks
// and measures them (nullable, left recursion, shortest lengths).
class GbnfCompiler {
 public:
  explicit GbnfCompiler(std::string_view text) : s_(text) {}

  Result<std::shared_ptr<const GbnfGrammar>> run() {
    if (s_.size() > GbnfGrammar::kMaxTextBytes) {
      return invalid_argument(fmt::format("grammar is {} bytes; at most {} are taken", s_.size(),
                                          GbnfGrammar::kMaxTextBytes));
    }
    g_ = std::make_shared<GbnfGrammar>();
    TS_RETURN_IF_ERROR(parse_rules());
    TS_RETURN_IF_ERROR(resolve());
    flatten();
    TS_RETURN_IF_ERROR(check_left_recursion());
    measure();
    const GbnfGrammar::Rule& root = g_->rules_[g_->root_];
    if (root.min_bytes >= GbnfGrammar::kNever) {
      return invalid_argument("grammar: 'root' can never end (every alternative needs a rule that never ends)");
    }
    std::shared_ptr<const GbnfGrammar> g = g_;
    if (GbnfMatcher(g).n_stacks() == 0) {
      return invalid_argument(fmt::format(
          "grammar: its start is too ambiguous or too deep for the matcher (more than {} parse "
          "stacks, {} levels or {} expansion steps); simplify the rules 'root' starts with",
          GbnfMatcher::kMaxStacks, GbnfMatcher::kMaxStackDepth, GbnfMatcher::kMaxExpansionSteps));
    }
    return g;
  }

 private:
  using Element = GbnfGrammar::Element;
  using Op = GbnfGrammar::Op;
  using Sequence = std::vector<Element>;
  struct RawRule {
    std::string name;
    std::vector<Sequence> alternatives;
    bool defined = false;
    size_t first_use = 0;  // text offset of the first reference (for "undefined rule")
    int n_generated = 0;   // generated rules named after this one
  };

  // --- errors and positions

  Status error_at(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return invalid_argument(fmt::format("grammar line {}, column {}: {}", line, col, what));
  }
  std::string found() const {
    if (i_ >= s_.size()) return "the end of the text";
    const char c = s_[i_];
    if (c == '\n' || c == '\r') return "the end of the line";
    return quote(c);
  }

  // A byte of the text for a message: printable ASCII quoted, others in hex (a message must stay
  // valid UTF-8: it goes into a JSON error body).
  static std::string quote(char c) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b >= 0x7F) return fmt::format("byte 0x{:02x}", b);
    return fmt::format("'{}'", c);
  }

  // --- lexing

  bool eof() const { return i_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[i_]; }
  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }
  // Spaces, tabs and comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (!eof()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t') {
        ++i_;
      } else if (c == '#') {
        while (!eof() && s_[i_] != '\n' && s_[i_] != '\r') ++i_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++i_;
      } else {
        break;
      }
    }
  }

  // One code point of the text (UTF-8), unescaped.
  Result<uint32_t> text_code_point() {
    const auto c = static_cast<unsigned char>(s_[i_]);
    if (c < 0x80) {
      ++i_;
      return static_cast<uint32_t>(c);
    }
    const size_t start = i_;
    int n = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07u;
    } else {
      return error_at(start, "the grammar text is not valid UTF-8");
    }
    ++i_;
    for (int k = 0; k < n; ++k, ++i_) {
      if (eof() || (static_cast<unsigned char>(s_[i_]) & 0xC0) != 0x80) {
        return error_at(start, "the grammar text is not valid UTF-8");
      }
      cp = (cp << 6) | (static_cast<unsigned char>(s_[i_]) & 0x3Fu);
    }
    const uint32_t min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
    if (cp < min || cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return error_at(start, "the grammar text is not valid UTF-8");
    }
    return cp;
  }

  // A character of a literal or class: an escape or one code point of the text.
  Result<uint32_t> char_or_escape() {
    if (peek() != '\\') return text_code_point();
    const size_t start = i_;
    ++i_;
    if (eof()) return error_at(start, "an escape at the end of the text");
    const char e = s_[i_++];
    int digits = 0;
    switch (e) {
      case 'n': return uint32_t{'\n'};
      case 't': return uint32_t{'\t'};
      case 'r': return uint32_t{'\r'};
      case '\\': case '"': case '[': case ']': case '-': case '^': case '/':
        return static_cast<uint32_t>(e);
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      default:
        return error_at(start, fmt::format("unknown escape '\\' + {} (taken: \\n \\t \\r \\\\ \\\" \\[ \\] "
                                           "\\- \\^ \\/ \\xHH \\uHHHH \\UHHHHHHHH)", quote(e)));
    }
    uint64_t cp = 0;
    for (int k = 0; k < digits; ++k, ++i_) {
      const char h = peek();
      int v = -1;
      if (h >= '0' && h <= '9') v = h - '0';
      if (h >= 'a' && h <= 'f') v = h - 'a' + 10;
      if (h >= 'A' && h <= 'F') v = h - 'A' + 10;
      if (v < 0) {
        return error_at(start, fmt::format("'\\{}' needs {} hexadecimal digits", e, digits));
      }
      cp = cp * 16 + static_cast<uint64_t>(v);
    }
    if (cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return error_at(start, fmt::format("'\\{}' escape U+{:X} is not a Unicode scalar value", e, cp));
    }
    return static_cast<uint32_t>(cp);
  }

  // --- rules and elements

  Result<uint32_t> rule_id(const std::string& name, size_t at) {
    auto it = names_.find(name);
    if (it != names_.end()) return it->second;
    return new_rule(name, at);
  }
  Result<uint32_t> new_rule(std::string name, size_t at) {
    if (rules_.size() >= GbnfGrammar::kMaxRules) {
      return error_at(at, fmt::format("more than {} rules (generated ones for groups and "
                                      "repetitions included)", GbnfGrammar::kMaxRules));
    }
    const auto id = static_cast<uint32_t>(rules_.size());
    rules_.push_back({name, {}, false, at, 0});
    names_.emplace(std::move(name), id);
    return id;
  }
  Result<uint32_t> generated_rule(uint32_t parent, std::vector<Sequence> alternatives, size_t at) {
    const std::string name = fmt::format("{}#{}", rules_[parent].name, ++rules_[parent].n_generated);
    TS_ASSIGN_OR_RETURN(const uint32_t id, new_rule(name, at));
    rules_[id].alternatives = std::move(alternatives);
    rules_[id].defined = true;
    return id;
  }
  Status count(size_t n, size_t at) {
    n_elements_ += n;
    if (n_elements_ > GbnfGrammar::kMaxElements) {
      return error_at(at, fmt::format("the grammar expands to more than {} elements (repetitions "
                                      "count each copy)", GbnfGrammar::kMaxElements));
    }
    return Status::ok();
  }
  uint32_t class_id(Ranges ranges) {
    auto it = class_ids_.find(ranges);
    if (it != class_ids_.end()) return it->second;
    GbnfGrammar::Class c;
    c.first = static_cast<uint32_t>(g_->ranges_.size());
    c.n = static_cast<uint32_t>(ranges.size());
    c.min_bytes = utf8_bytes(ranges.front().first);
    for (const auto& [lo, hi] : ranges) {
      for (uint32_t cp = lo; cp <= hi && cp < 128; ++cp) c.ascii[cp / 64] |= uint64_t{1} << (cp % 64);
    }
    g_->ranges_.insert(g_->ranges_.end(), ranges.begin(), ranges.end());
    const auto id = static_cast<uint32_t>(g_->classes_.size());
    g_->classes_.push_back(c);
    class_ids_.emplace(std::move(ranges), id);
    return id;
  }

  Status parse_rules() {
    for (;;) {
      skip_space(true);
      if (eof()) break;
      const size_t at = i_;
      if (!name_char(peek())) return error_at(i_, fmt::format("expected a rule name, found {}", found()));
      std::string name;
      while (name_char(peek())) name += s_[i_++];
      skip_space(false);
      if (s_.substr(i_, 3) != "::=") {
        return error_at(i_, fmt::format("expected '::=' after rule name '{}', found {}", name, found()));
      }
      i_ += 3;
      TS_ASSIGN_OR_RETURN(const uint32_t id, rule_id(name, at));
      if (rules_[id].defined) return error_at(at, fmt::format("rule '{}' is defined twice", name));
      rules_[id].defined = true;
      skip_space(true);
      TS_ASSIGN_OR_RETURN(auto alternatives, parse_alternatives(id, 0));
      rules_[id].alternatives = std::move(alternatives);
      skip_space(false);
      if (!eof() && peek() != '\n' && peek() != '\r') {
        return error_at(i_, fmt::format("expected a symbol, '|' or the end of the line, found {}", found()));
      }
    }
    return Status::ok();
  }

  // Alternatives of `rule` (the rule being defined: generated rules are named after it). At the
  // top level (depth 0) the list ends at the end of a line unless the next line starts with '|'.
  Result<std::vector<Sequence>> parse_alternatives(uint32_t rule, int depth) {
    std::vector<Sequence> alternatives;
    for (;;) {
      TS_ASSIGN_OR_RETURN(Sequence seq, parse_sequence(rule, depth));
      alternatives.push_back(std::move(seq));
      const size_t save = i_;
      skip_space(true);
      if (peek() == '|') {
        ++i_;
        skip_space(true);
        continue;
      }
      if (depth == 0) i_ = save;
      return alternatives;
    }
  }

  Result<Sequence> parse_sequence(uint32_t rule, int depth) {
    Sequence seq;
    size_t last = seq.size();  // where the last symbol starts (postfix operators apply to it)
    bool have_last = false;
    for (;;) {
      skip_space(depth > 0);
      if (eof()) break;
      const size_t at = i_;
      const char c = peek();
      if (c == '"') {
        ++i_;
        last = seq.size();
        have_last = true;
        while (peek() != '"') {
          if (eof() || peek() == '\n' || peek() == '\r') return error_at(at, "unterminated string literal");
          TS_ASSIGN_OR_RETURN(const uint32_t cp, char_or_escape());
          TS_RETURN_IF_ERROR(count(1, at));
          seq.push_back({Op::kChars, class_id({{cp, cp}})});
        }
        ++i_;
      } else if (c == '[') {
        TS_ASSIGN_OR_RETURN(const uint32_t cls, parse_class());
        TS_RETURN_IF_ERROR(count(1, at));
        last = seq.size();
        have_last = true;
        seq.push_back({Op::kChars, cls});
      } else if (c == '.') {
        ++i_;
        TS_RETURN_IF_ERROR(count(1, at));
        last = seq.size();
        have_last = true;
        seq.push_back({Op::kChars, class_id(normalize({{0, kMaxCodePoint}}))});
      } else if (name_char(c)) {
        std::string name;
        while (name_char(peek())) name += s_[i_++];
        TS_ASSIGN_OR_RETURN(const uint32_t id, rule_id(name, at));
        TS_RETURN_IF_ERROR(count(1, at));
        last = seq.size();
        have_last = true;
        seq.push_back({Op::kRule, id});
      } else if (c == '(') {
        if (depth + 1 > GbnfGrammar::kMaxNesting) {
          return error_at(at, fmt::format("parentheses nest deeper than {} levels", GbnfGrammar::kMaxNesting));
        }
        ++i_;
        skip_space(true);
        TS_ASSIGN_OR_RETURN(auto alternatives, parse_alternatives(rule, depth + 1));
        if (peek() != ')') return error_at(i_, fmt::format("expected ')' closing the group, found {}", found()));
        ++i_;
        TS_ASSIGN_OR_RETURN(const uint32_t id, generated_rule(rule, std::move(alternatives), at));
        TS_RETURN_IF_ERROR(count(1, at));
        last = seq.size();
        have_last = true;
        seq.push_back({Op::kRule, id});
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) return error_at(at, fmt::format("'{}' with nothing before it to repeat", c));
        TS_RETURN_IF_ERROR(parse_repetition(rule, &seq, last, at));
        have_last = false;  // x** is refused: repeat a group instead
      } else if (c == '<' || c == '!') {
        return error_at(at, "llama.cpp's token syntax (<[id]>, <name>, !) is not supported");
      } else {
        break;
      }
    }
    return seq;
  }

  Result<uint32_t> parse_class() {
    const size_t at = i_;
    ++i_;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++i_;
    }
    Ranges ranges;
    while (peek() != ']') {
      if (eof() || peek() == '\n' || peek() == '\r') return error_at(at, "unterminated character class");
      TS_ASSIGN_OR_RETURN(const uint32_t lo, char_or_escape());
      uint32_t hi = lo;
      if (peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        const size_t range_at = i_;
        if (eof() || peek() == '\n' || peek() == '\r') return error_at(at, "unterminated character class");
        TS_ASSIGN_OR_RETURN(hi, char_or_escape());
        if (hi < lo) return error_at(range_at, fmt::format("range U+{:X}-U+{:X} is backwards", lo, hi));
      }
      ranges.emplace_back(lo, hi);
    }
    ++i_;
    ranges = normalize(std::move(ranges));
    if (negated) ranges = complement(ranges);
    if (ranges.empty()) return error_at(at, "the character class matches no character");
    return class_id(std::move(ranges));
  }

  // Applies the postfix operator at i_ to seq[last, end): x* x+ x? x{m} x{m,} x{m,n}.
  Status parse_repetition(uint32_t rule, Sequence* seq, size_t last, size_t at) {
    const char op = s_[i_++];
    int64_t min = 0, max = -1;  // max -1: unbounded
    if (op == '+') min = 1;
    if (op == '?') max = 1;
    if (op == '{') {
      auto number = [this](int64_t* v) {
        if (!(peek() >= '0' && peek() <= '9')) return false;
        *v = 0;
        while (peek() >= '0' && peek() <= '9') {
          *v = std::min<int64_t>(*v * 10 + (s_[i_++] - '0'), 1'000'000);
        }
        return true;
      };
      skip_space(false);
      if (!number(&min)) return error_at(i_, fmt::format("expected a count after '{{', found {}", found()));
      skip_space(false);
      max = min;
      if (peek() == ',') {
        ++i_;
        skip_space(false);
        if (!number(&max)) max = -1;
        skip_space(false);
      }
      if (peek() != '}') return error_at(i_, fmt::format("expected '}}' closing the repetition, found {}", found()));
      ++i_;
      if (min > GbnfGrammar::kMaxRepetition || max > GbnfGrammar::kMaxRepetition) {
        return error_at(at, fmt::format("repetition counts above {} are not taken", GbnfGrammar::kMaxRepetition));
      }
      if (max >= 0 && max < min) return error_at(at, fmt::format("repetition {{{},{}}} has max below min", min, max));
    }
    // Repeating an empty literal ("" * or ""{2,}) matches empty text: nothing to add.
    if (seq->size() == last) return Status::ok();
    // The repeated item as one element: a multi-character literal becomes a rule.
    Element item = (*seq)[last];
    if (seq->size() - last > 1) {
      Sequence body(seq->begin() + static_cast<ptrdiff_t>(last), seq->end());
      TS_ASSIGN_OR_RETURN(const uint32_t id, generated_rule(rule, {std::move(body)}, at));
      item = {Op::kRule, id};
    }
    seq->resize(last);
    const auto m = static_cast<size_t>(min);
    TS_RETURN_IF_ERROR(count(m + 1, at));
    seq->insert(seq->end(), m, item);
    if (max < 0) {
      // star ::= item star | ""
      TS_ASSIGN_OR_RETURN(const uint32_t star, generated_rule(rule, {}, at));
      rules_[star].alternatives = {{item, {Op::kRule, star}}, {}};
      seq->push_back({Op::kRule, star});
    } else if (max > min) {
      // opt_k ::= item opt_{k-1} | "" (opt_1 ::= item | ""), nested so that each count is one parse.
      uint32_t inner = 0;
      for (int64_t k = 1; k <= max - min; ++k) {
        Sequence first = {item};
        if (k > 1) first.push_back({Op::kRule, inner});
        TS_RETURN_IF_ERROR(count(first.size(), at));
        TS_ASSIGN_OR_RETURN(inner, generated_rule(rule, {std::move(first), {}}, at));
      }
      seq->push_back({Op::kRule, inner});
    }
    return Status::ok();
  }

  Status resolve() {
    for (const RawRule& r : rules_) {
      if (!r.defined) return error_at(r.first_use, fmt::format("rule '{}' is used but never defined", r.name));
    }
    auto it = names_.find("root");
    if (it == names_.end()) return invalid_argument("grammar: no 'root' rule (the start rule must be named root)");
    g_->root_ = it->second;
    return Status::ok();
  }

  void flatten() {
    for (RawRule& r : rules_) {
      GbnfGrammar::Rule out;
      out.name = r.name;
      for (const Sequence& seq : r.alternatives) {
        out.alternatives.push_back(static_cast<uint32_t>(g_->elements_.size()));
        g_->elements_.insert(g_->elements_.end(), seq.begin(), seq.end());
        g_->elements_.push_back({Op::kEnd, 0});
      }
      g_->rules_.push_back(std::move(out));
    }
  }

  // Which rules can match empty text.
  std::vector<uint8_t> nullable() const {
    const auto& rules = g_->rules_;
    std::vector<uint8_t> n(rules.size(), 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules.size(); ++r) {
        if (n[r]) continue;
        for (uint32_t at : rules[r].alternatives) {
          bool all = true;
          for (; g_->elements_[at].op != Op::kEnd; ++at) {
            const Element& e = g_->elements_[at];
            if (e.op == Op::kChars || !n[e.arg]) {
              all = false;
              break;
            }
          }
          if (all) {
            n[r] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    return n;
  }

  // A rule that reaches itself before consuming a character (left recursion) would expand
  // forever: refused, naming the cycle.
  Status check_left_recursion() {
    const std::vector<uint8_t> empty = nullable();
    const auto& rules = g_->rules_;
    std::vector<std::vector<uint32_t>> left(rules.size());
    for (size_t r = 0; r < rules.size(); ++r) {
      for (uint32_t at : rules[r].alternatives) {
        for (; g_->elements_[at].op == Op::kRule; ++at) {
          left[r].push_back(g_->elements_[at].arg);
          if (!empty[g_->elements_[at].arg]) break;
        }
      }
    }
    // Iterative depth-first search: 0 new, 1 on the path, 2 done.
    std::vector<uint8_t> color(rules.size(), 0);
    std::vector<std::pair<uint32_t, size_t>> path;
    for (uint32_t start = 0; start < rules.size(); ++start) {
      if (color[start]) continue;
      path.push_back({start, 0});
      color[start] = 1;
      while (!path.empty()) {
        auto& [r, next] = path.back();
        if (next == left[r].size()) {
          color[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t to = left[r][next++];
        if (color[to] == 1) {
          std::string cycle;
          bool on = false;
          for (const auto& p : path) {
            on = on || p.first == to;
            if (on) cycle += describe(p.first) + " -> ";
          }
          cycle += describe(to);
          return invalid_argument(fmt::format(
              "grammar: left recursion: {} can reach itself before matching any character ({}); "
              "it would expand forever: write it with repetition instead (x ::= y (\"op\" y)*), and "
              "do not repeat a part that can match empty text",
              describe(to), cycle));
        }
        if (color[to] == 0) {
          color[to] = 1;
          path.push_back({to, 0});
        }
      }
    }
    return Status::ok();
  }
  std::string describe(uint32_t r) const {
    const std::string& name = g_->rules_[r].name;
    const size_t hash = name.find('#');
    if (hash == std::string::npos) return fmt::format("rule '{}'", name);
    return fmt::format("a group or repetition in rule '{}' ({})", name.substr(0, hash), name);
  }

  // Shortest lengths: per rule (fixed point), then per element to the end of its alternative.
  void measure() {
    auto& rules = g_->rules_;
    const auto& el = g_->elements_;
    auto seq_bytes = [&](uint32_t at) {
      uint32_t total = 0;
      for (; el[at].op != Op::kEnd; ++at) {
        total = add_bytes(total, el[at].op == Op::kChars ? g_->classes_[el[at].arg].min_bytes
                                                         : rules[el[at].arg].min_bytes);
      }
      return total;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& r : rules) {
        uint32_t best = r.min_bytes;
        for (uint32_t at : r.alternatives) best = std::min(best, seq_bytes(at));
        if (best < r.min_bytes) {
          r.min_bytes = best;
          changed = true;
        }
      }
    }
    g_->rest_bytes_.assign(el.size(), 0);
    for (size_t k = el.size(); k-- > 0;) {
      if (el[k].op == Op::kEnd) continue;
      const uint32_t own = el[k].op == Op::kChars ? g_->classes_[el[k].arg].min_bytes : rules[el[k].arg].min_bytes;
      g_->rest_bytes_[k] = add_bytes(own, g_->rest_bytes_[k + 1]);
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::shared_ptr<GbnfGrammar> g_;
  std::vector<RawRule> rules_;
  std::map<std::string, uint32_t> names_;
  std::map<Ranges, uint32_t> class_ids_;
  size_t n_elements_ = 0;
};

}  // namespace gbnf_compile

Result<std::shared_ptr<const GbnfGrammar>> GbnfGrammar::compile(std::string_view text) {
  return gbnf_compile::GbnfCompiler(text).run();
}

bool GbnfGrammar::class_contains(uint32_t cls, uint32_t cp) const {
  const Class& c = classes_[cls];
  if (cp < 128) return (c.ascii[cp / 64] >> (cp % 64)) & 1;
  const auto* first = ranges_.data() + c.first;
  const auto* last = first + c.n;
  // The first range whose end is at or past cp.
  const auto* it = std::lower_bound(first, last, cp, [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) {
    return r.second < v;
  });
  return it != last && it->first <= cp;
}

bool GbnfGrammar::class_intersects(uint32_t cls, uint32_t lo, uint32_t hi) const {
  const Class& c = classes_[cls];
  const auto* first = ranges_.data() + c.first;
  const auto* last = first + c.n;
  const auto* it = std::lower_bound(first, last, lo, [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) {
    return r.second < v;
  });
  return it != last && it->first <= hi;
}

uint32_t GbnfGrammar::class_pick(uint32_t cls, uint32_t lo, uint32_t hi) const {
  const Class& c = classes_[cls];
  uint32_t smallest = UINT32_MAX;
  for (uint32_t k = 0; k < c.n && smallest == UINT32_MAX; ++k) {
    const auto& [a, b] = ranges_[c.first + k];
    if (b >= lo && a <= hi) smallest = std::max(a, lo);
  }
  if (smallest < 0x20) {
    // Same length, but printable reads better in a forced completion.
    for (uint32_t cp = std::max(lo, 0x20u); cp <= std::min(hi, 0x7Eu); ++cp) {
      if (class_contains(cls, cp)) return cp;
    }
  }
  return smallest;
}

}  // namespace tessera::engine
