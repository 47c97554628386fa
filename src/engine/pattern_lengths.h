// PatternLengths: a string `pattern` (RegexDfa) together with `minLength`/`maxLength`, so that
// the JSON matcher accepts a byte of such a string only when some completion both matches the
// pattern and has a length (in code points) within the bounds.
//
// The automaton walks a string's value bytes; lengths count characters. Each table state is a
// pair (automaton state, UTF-8 phase: between characters, or inside a multi-byte character with
// its remaining continuation bytes and the first one's range), reached from the start through
// well-formed UTF-8 only; a byte that starts a character weighs 1, a continuation byte 0. Escaped
// characters (\" \\ \/ \b \f \n \r \t) are their decoded byte. Per state the table holds:
//   - with maxLength <= kMaxTableLength: for every j <= maxLength, whether exactly j more
//     characters can reach an accepting state (exact for any bounds);
//   - with no maxLength and 0 < minLength <= kMaxTableLength: whether at least j more can;
//   - always: the fewest bytes, and the fewest characters, to an accepting state.
// A maxLength above kMaxTableLength with minLength 0 uses the fewest characters (exact too);
// with minLength > 0 as well, or a minLength above kMaxTableLength, build() refuses
// (kUnsupported). Construction is bounded by kMaxWork table steps (refused past it).
// Thread-safety: immutable after build(); shared by the sequences of a request.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/engine/regex_dfa.h"

namespace tessera::engine {

class PatternLengths {
 public:
  static constexpr int64_t kMaxTableLength = 1024;
  static constexpr int64_t kMaxWork = int64_t{1} << 26;

  // The UTF-8 phase of a position: remaining * 5 + range, with remaining 0..3 continuation bytes
  // still due and range the next one's limit (0: 80-BF, 1: A0-BF, 2: 80-9F, 3: 90-BF,
  // 4: 80-8F), as the matcher tracks them; 0 between characters.
  static constexpr int kPhases = 20;
  static uint8_t phase(int remaining, int range) { return static_cast<uint8_t>(remaining * 5 + range); }

  static Result<std::shared_ptr<const PatternLengths>> build(std::shared_ptr<const RegexDfa> dfa,
                                                             int64_t min_length, int64_t max_length);

  // Some completion from automaton state `state` in UTF-8 phase `phase`, with `count` characters
  // already written (the one being written included), matches and has a length within the bounds.
  bool feasible(uint16_t state, uint8_t phase, int64_t count) const;
  // The next byte of the fastest such completion, as a value byte (the caller escapes it): -1
  // when the string may close here, -2 when none exists.
  int next_value_byte(uint16_t state, uint8_t phase, int64_t count) const;

  const RegexDfa& dfa() const { return *dfa_; }

 private:
  struct Edge {
    uint32_t to;
    uint8_t byte;
    uint8_t weight;  // 1: the byte starts a character
  };
  int32_t index(uint16_t state, uint8_t phase) const;
  bool bit(int32_t x, int64_t j) const;
  // Lowest j in [lo, hi] with bit(x, j) (exact mode) or the smallest need (at-least mode); -1.
  int64_t target(int32_t x, int64_t count) const;

  std::shared_ptr<const RegexDfa> dfa_;
  int64_t min_length_ = 0, max_length_ = -1;
  enum class Mode : uint8_t { kExact, kAtLeast, kShortest } mode_ = Mode::kShortest;
  int64_t table_length_ = 0;  // bits per state: table_length_ + 1
  size_t words_ = 0;
  std::vector<std::pair<uint16_t, uint8_t>> states_;  // (automaton state, phase)
  std::vector<uint32_t> lookup_;                      // [state * kPhases + phase] -> index + 1
  std::vector<uint32_t> first_edge_;                  // edges_[first_edge_[x], first_edge_[x + 1])
  std::vector<Edge> edges_;
  std::vector<uint64_t> bits_;                        // [x * words_ + j / 64]
  std::vector<int32_t> byte_distance_, char_distance_;
};

}  // namespace tessera::engine
