// GbnfGrammar: a GBNF grammar (llama.cpp's grammar format, llama-server's `grammar` field)
// compiled for GbnfMatcher, structured output's acceptor of text a grammar generates.
//
// Syntax taken: `name ::= alternatives` one rule per line (a rule continues on the next lines
// inside parentheses, after `|`, or on a line that starts with `|`), `|` between alternatives,
// sequences, "literals" and [character classes] (`[a-z0-9_]`, `[^"\\]`) with the escapes \n \t \r
// \\ \" \[ \] \- \^ \/ \xHH \uHHHH \UHHHHHHHH (a code point; \xHH is U+00HH), `.` any character,
// groups ( ), postfix * + ? {m} {m,} {m,n}, # comments to the end of the line, rule names of
// letters, digits, '-' and '_'. `root` is the start rule. The text is UTF-8; a grammar matches
// code points, each written as UTF-8 (never a surrogate). Not taken: llama.cpp's token syntax
// (<[id]>, <name>, !).
//
// Compilation: repetitions and groups become generated rules (named "parent#n"), x{m,n} is m
// copies of x then n-m nested optional copies. Errors (Status kInvalidArgument, "grammar line L,
// column C: ..."): syntax, a bad escape, an undefined rule, no `root`, a rule defined twice, a
// class that matches nothing, left recursion (a rule that can reach itself before any character,
// through rules or a repeated part that can match empty text: it would loop forever), a root
// that can never end, a start more ambiguous than the matcher's bounds.
// Limits: kMaxTextBytes of text, kMaxRules rules (generated ones included), kMaxElements
// elements after expansion, kMaxRepetition for m and n, kMaxNesting levels of parentheses.
// Thread-safety: immutable after compile(); share it between sequences.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::engine {

namespace gbnf_compile {
class GbnfCompiler;
}

class GbnfGrammar {
 public:
  static constexpr size_t kMaxTextBytes = 64 * 1024;
  static constexpr size_t kMaxRules = 4096;
  static constexpr size_t kMaxElements = 65536;
  static constexpr int kMaxRepetition = 100;
  static constexpr int kMaxNesting = 64;
  // Rule lengths in bytes saturate here (a rule that can never end has kNever).
  static constexpr uint32_t kNever = 1u << 30;

  // Compiles `text`; errors as above.
  static Result<std::shared_ptr<const GbnfGrammar>> compile(std::string_view text);

  // The compiled form: each alternative of each rule is a run of elements ending with kEnd.
  enum class Op : uint8_t { kEnd, kChars, kRule };
  struct Element {
    Op op = Op::kEnd;
    uint32_t arg = 0;  // kChars: character class; kRule: rule
  };
  struct Rule {
    std::string name;
    std::vector<uint32_t> alternatives;  // index of each alternative's first element
    uint32_t min_bytes = kNever;         // the shortest text the rule matches
  };

  const Element& element(uint32_t at) const { return elements_[at]; }
  // The fewest bytes that finish the alternative from element `at` on (kNever: none can).
  uint32_t rest_bytes(uint32_t at) const { return rest_bytes_[at]; }
  const Rule& rule(uint32_t r) const { return rules_[r]; }
  uint32_t root() const { return root_; }
  size_t n_rules() const { return rules_.size(); }
  size_t n_elements() const { return elements_.size(); }

  // Character classes: sorted disjoint code point ranges, surrogates excluded.
  bool class_contains(uint32_t cls, uint32_t cp) const;
  // Some code point of the class lies in [lo, hi].
  bool class_intersects(uint32_t cls, uint32_t lo, uint32_t hi) const;
  // The smallest code point of the class in [lo, hi], preferring printable ASCII; a class that
  // misses the range gives UINT32_MAX.
  uint32_t class_pick(uint32_t cls, uint32_t lo, uint32_t hi) const;
  // UTF-8 bytes of the class's shortest character.
  uint32_t class_min_bytes(uint32_t cls) const { return classes_[cls].min_bytes; }

 private:
  friend class gbnf_compile::GbnfCompiler;
  struct Class {
    uint32_t first = 0, n = 0;  // ranges_[first, first + n)
    uint64_t ascii[2] = {0, 0};  // code points below 128, as bits
    uint32_t min_bytes = 1;
  };

  std::vector<Element> elements_;
  std::vector<uint32_t> rest_bytes_;  // per element
  std::vector<Rule> rules_;
  std::vector<Class> classes_;
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
  uint32_t root_ = 0;
};

}  // namespace tessera::engine
