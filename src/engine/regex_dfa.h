// RegexDfa: a JSON Schema `pattern` (the ECMA-262 subset people write) compiled to a DFA over the
// UTF-8 bytes of a string's value, for structured output: the matcher steps it on every value
// byte (escapes decoded) and closes a string only in an accepting state.
//
// Semantics: a pattern matches anywhere in the string (JSON Schema), so a pattern without a
// leading '^' may be preceded, and one without a trailing '$' followed, by any characters.
// Supported: literals (UTF-8 too), '.', classes [...] and [^...] (ranges of ASCII), \d \w \s and
// their negations, escapes (\n \t \r \f \v \0 \xHH \uHHHH, escaped punctuation), groups (...) and
// (?:...), alternation, * + ? {n} {n,} {n,m} (and their lazy forms, which match the same
// strings), '^' at the start and '$' at the end of the whole pattern. Refused (kUnsupported, named):
// backreferences, lookaround, named groups, \b \B, anchors elsewhere, repeat counts above 100,
// automata above kMaxStates.
// The strings it accepts are a subset where engines disagree, so every output matches under both
// ECMA-262 and Python's `re` (the validators people use): '.', \d, \w, \s are ASCII-only except
// that '.' takes any non-ASCII character but U+2028/U+2029; negated classes take ASCII only; no
// control character but \b \t \n \f \r (the ones JSON writes without \u) is ever produced.
// States that cannot reach an accepting state are removed: every accepted prefix completes.
// Thread-safety: immutable after compile(); share it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::engine {

class RegexDfa {
 public:
  static constexpr uint16_t kDead = 0xFFFF;
  static constexpr size_t kMaxStates = 4096;
  static constexpr int kMaxRepeat = 100;

  enum class Match : uint8_t {
    kSearch,  // JSON Schema's `pattern`: anywhere in the string unless anchored by '^' / '$'
    kFull,    // the whole text (vLLM's `regex` structured output): implicitly anchored
  };
  static Result<std::shared_ptr<const RegexDfa>> compile(std::string_view pattern,
                                                         Match match = Match::kSearch);

  uint16_t start() const { return 0; }
  uint16_t next(uint16_t state, uint8_t byte) const {
    return state == kDead ? kDead : table_[static_cast<size_t>(state) * 256 + byte];
  }
  bool accepting(uint16_t state) const { return state != kDead && accept_[state] != 0; }
  // Fewest bytes from `state` to an accepting state (0 when accepting).
  int32_t distance(uint16_t state) const { return state == kDead ? -1 : distance_[state]; }
  // A byte on a shortest path from a non-accepting `state` to an accepting one (printable ASCII
  // preferred).
  uint8_t toward_accept(uint16_t state) const { return toward_[state]; }
  // Whether any byte continues from `state` (false: an accepting end, nothing may follow).
  bool can_continue(uint16_t state) const { return state != kDead && continues_[state] != 0; }
  size_t size() const { return accept_.size(); }

 private:
  std::vector<uint16_t> table_;   // [state * 256 + byte]
  std::vector<uint8_t> accept_;
  std::vector<int32_t> distance_;
  std::vector<uint8_t> toward_;
  std::vector<uint8_t> continues_;
  friend class RegexDfaBuilder;
};

}  // namespace tessera::engine
