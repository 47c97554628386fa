// GbnfMatcher: an incremental, byte-at-a-time acceptor of text that a GbnfGrammar generates.
// feed() returns false (and leaves the state unchanged) for a byte that no parse allows, so every
// prefix it accepted extends to a complete text: structured output masks each token whose bytes
// it would refuse.
//
// How: the state is the set of parse stacks still alive (each a stack of element positions, the
// top one a character class; duplicates merged), advanced one code point at a time; a UTF-8
// character's leading bytes are accepted while some stack's class holds a character that starts
// with them. A rule called last in an alternative does not grow the stack (so `x*` and right
// recursion run in constant depth), and parse paths that can never end are dropped, so every live
// stack can complete. Bounds that keep hostile grammars (ambiguous, exponential, deep) cheap:
// kMaxStacks live stacks, kMaxStackDepth frames per stack, kMaxExpansionSteps steps per
// character; a character that would pass one is refused (the state is unchanged), so the cost of
// a byte is at most about kMaxExpansionSteps * kMaxStackDepth word copies.
// The state is a value of variable size (copy it with assign_state to try bytes; buffers keep
// their capacity, so repeated copies do not allocate).
// Thread-safety: a plain value; the grammar is shared and immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/engine/gbnf_grammar.h"

namespace tessera::engine {

class GbnfMatcher {
 public:
  static constexpr uint32_t kMaxStacks = 256;
  static constexpr uint32_t kMaxStackDepth = 128;
  static constexpr uint32_t kMaxExpansionSteps = 4096;

  // The state before any byte. When the start alone passes a bound, no stack is alive and every
  // byte is refused (GbnfGrammar::compile refuses such grammars, so this never happens there).
  explicit GbnfMatcher(std::shared_ptr<const GbnfGrammar> grammar);

  // Consumes one byte if some parse allows it; false (state unchanged) otherwise.
  bool feed(uint8_t c) { return advance(c); }
  // As feed(c) (the token mask's name for it; here too a refused byte leaves the state as it was).
  bool advance(uint8_t c);
  // Consumes all of `bytes`, or none of them (false) when one is refused.
  bool feed(std::string_view bytes);
  // The bytes so far are a whole text of the grammar: the output may end here.
  bool complete() const { return complete_ && need_ == 0; }
  // complete() and no byte may follow.
  bool closed() const { return complete() && n_stacks_ == 1; }
  // Live parse stacks (the finished one included): 0 only for a grammar whose start passed a bound.
  uint32_t n_stacks() const { return n_stacks_; }

  // Copies the state only (the grammar pointer stays shared).
  void assign_state(const GbnfMatcher& other);
  // Writes the state as words into `key` (replacing its contents): two states with the same key
  // take the same bytes from here on. For per-state caches (the token mask's).
  void state_key(std::vector<uint32_t>* key) const;

  // Bytes that complete the text from here, short but not necessarily the shortest: the parse
  // with the fewest bytes left (GbnfGrammar::rest_bytes) is followed, each character the
  // smallest its class holds (printable ASCII preferred). Empty when complete() already; nullopt
  // when none was found within `max_bytes` or a bound refused a byte on the way. Every byte is
  // fed to the acceptor, so a returned completion is always accepted.
  std::optional<std::string> closing_bytes(size_t max_bytes = 4096) const;

 private:
  // Stacks are stored back to back as [n, e_0 .. e_{n-1}], bottom frame first.
  bool step(uint32_t cp);  // a whole code point
  bool expand();           // cur_ expanded into next_ until each stack's top is a class
  bool emit();             // cur_ added to next_ (deduplicated)
  bool viable(uint32_t prefix, uint32_t len, uint32_t remaining) const;
  static void interval(uint32_t prefix, uint32_t len, uint32_t remaining, uint32_t* lo, uint32_t* hi);

  std::shared_ptr<const GbnfGrammar> g_;
  // The state.
  std::vector<uint32_t> stacks_;
  uint32_t n_stacks_ = 0;
  bool complete_ = false;      // one stack is empty: root has ended
  uint32_t partial_ = 0;       // the bits of a UTF-8 character cut after `len_ - need_` bytes
  uint8_t need_ = 0, len_ = 0, lead_ = 0;
  // Scratch for step(); not part of the state.
  std::vector<uint32_t> next_, pending_, cur_;
  std::vector<uint64_t> slots_;  // dedup table: generation << 32 | (offset in next_ + 1)
  uint32_t generation_ = 0, n_next_ = 0, steps_ = 0;
  bool complete_next_ = false;
};

}  // namespace tessera::engine
