// JsonMatcher: an incremental, byte-at-a-time acceptor of one JSON value that satisfies a
// JsonSchema. feed() returns false (and leaves the state unchanged) for a byte that no valid
// continuation allows, so every prefix it accepted extends to a valid document: structured output
// masks each token whose bytes it would refuse.
//
// What it enforces: JSON's grammar (RFC 8259: strings with escapes and well-formed UTF-8, numbers,
// literals) and the schema (JsonSchema's graph): types, enum/const texts, anyOf/oneOf (the
// alternative the first byte names), property names (no duplicates of declared ones, none of the
// forbidden ones; others only where patternProperties or additionalProperties allow, taking
// the schema of the patterns their names match), required properties and
// minProperties before '}', maxProperties, item counts, prefixItems and uniqueItems (of
// enum items), string lengths, numeric
// bounds and multipleOf (checked on every digit: a prefix is accepted only if some number within
// the limits below extends it). A value is opened only where its smallest completion fits the
// nesting limit (JsonSchema::Node::min_depth), so recursive schemas always close. Limits that keep generation finite and the state small:
// whitespace between tokens is one space or tab, or a newline and at most kMaxIndent spaces or
// tabs (as llama.cpp's JSON grammars; small models otherwise fill the gaps with newlines);
// object keys escaped only as a JSON writer does (no "\/", \u only for control characters
// without a short escape, lowercase), so a key equals a declared name exactly when its text
// does; kMaxDepth nesting, kMaxNumberBytes per
// number (kMaxIntegerBytes for integers, kMaxExponentDigits per exponent).
// The state is a value of fixed size (copy it to try bytes; the token mask does).
// Thread-safety: a plain value; the schema is shared and immutable.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/engine/json_schema.h"

namespace tessera::engine {

class JsonMatcher {
 public:
  static constexpr int kMaxDepth = 24;
  static constexpr int kMaxIndent = 20;  // spaces/tabs after a newline between tokens
  static constexpr int kMaxNumberBytes = 32;
  // An integer's bytes ('-' included): 18 digits stay within int64; exponents of at most two
  // digits keep every number within double's range (parsers refuse overflow).
  static constexpr int kMaxIntegerBytes = 19;
  static constexpr int kMaxExponentDigits = 2;

  explicit JsonMatcher(std::shared_ptr<const JsonSchema> schema);

  // Consumes one byte if it keeps the document valid; false (state unchanged) otherwise.
  bool feed(uint8_t c);
  // As feed(c) without the undo: on false the state is unspecified (use it on a copy made with
  // assign_state, as the token mask does).
  bool advance(uint8_t c);
  // Consumes all of `bytes`, or none of them (false) when one is refused.
  bool feed(std::string_view bytes);
  // True when the bytes so far are one complete valid value (trailing whitespace allowed): the
  // output may end here.
  bool complete() const;
  // True when the value is complete and nothing but whitespace may follow.
  bool closed() const;

  // Inside a string between characters (not in an escape or a UTF-8 sequence) where any bytes
  // that are plain string content (TokenVocabulary::plain) are accepted: a value string without
  // length bounds, or an object key that no declared property matches any more where additional
  // properties are allowed.
  bool in_plain_string() const;

  // Where the next bytes walk a RegexDfa and nothing else: raw text (JsonSchema::raw_text), or
  // between characters of a string with a pattern. There the tokens allowed depend only on the
  // automaton's state (plain string content only, inside a string), which the token mask caches.
  struct DfaPosition {
    const RegexDfa* dfa = nullptr;
    uint16_t state = 0;
    bool raw = false;  // raw text: every token's bytes walk the automaton
  };
  std::optional<DfaPosition> dfa_position() const;

  // Copies the state only (the schema pointer stays shared): cheap, for trying bytes.
  void assign_state(const JsonMatcher& other);

  // Bytes that complete the value from here, short but not necessarily the shortest (close the
  // open string, finish a number or literal, the missing required properties with minimal
  // values, minItems minimal items, closing brackets): feeding them leaves complete() true.
  // Empty when complete() already; nullopt when no completion of at most `max_bytes` was found
  // (a minItems or minLength beyond it, say). Every byte is checked by the acceptor, so a
  // returned completion is always accepted. Cost: a few matcher steps per byte returned.
  std::optional<std::string> closing_bytes(size_t max_bytes = 4096) const;

 private:
  // kRaw: the whole text walks JsonSchema::raw()'s automaton (state in `key`), no JSON.
  enum Kind : uint8_t { kRoot, kValue, kObject, kKey, kArray, kString, kNumber, kLiteral, kRaw };
  struct Frame {
    Kind kind = kRoot;
    uint8_t phase = 0;
    uint8_t aux = 0;         // string: escape/unicode/UTF-8 continuation state
    uint8_t aux2 = 0;        // string: \u digits seen; UTF-8: first-byte constraint
    int32_t node = 0;        // schema node
    int32_t count = 0;       // literal/key: bytes matched; array: items; number: bytes;
                             // length-bounded string: characters; object: members
    int32_t key = -1;        // object: property of the value being read (-2: additional)
    uint64_t mask = 0;       // object: properties seen; key/literal: candidates alive
    uint64_t seen = 0;       // key: declared properties already seen that still match
    uint64_t pat = 0;        // key: each patternProperties automaton's state, 16 bits each
                             // (array with uniqueItems: the literals written, in `mask`)
  };

  bool step(uint8_t c);
  // One byte at the top frame: taken, refused, or (kAgain) the frame ended and the byte belongs
  // to the frame now on top (a number or literal ended by its parent's byte, an item starting).
  enum class Step : uint8_t { kTaken, kRefused, kAgain };
  Step string_step(Frame& f, uint8_t c);
  Step key_step(Frame& f, uint8_t c);
  Step number_step(Frame& f, uint8_t c);
  Step literal_step(Frame& f, uint8_t c);
  Step object_step(Frame& f, uint8_t c, bool ws);
  Step array_step(Frame& f, uint8_t c, bool ws);
  bool take_ws(uint8_t c);
  bool start_value(int32_t node, uint8_t c);
  bool string_byte(Frame& f, uint8_t c, bool& closed);
  // A string with a pattern: the automaton's state after byte `c` (f.key before), false when it
  // refuses it (or would close unmatched).
  static bool pattern_step(const Frame& f, const RegexDfa& dfa, uint8_t c, uint16_t* next);
  static int pattern_closing_byte(const Frame& f, const RegexDfa& dfa);
  // A string with a pattern and minLength/maxLength (JsonSchema::Node::pattern_lengths).
  Step pattern_length_step(Frame& f, const PatternLengths& pl, uint8_t c);
  static int pattern_length_closing_byte(const Frame& f, const PatternLengths& pl);
  bool number_byte(Frame& f, uint8_t c, bool integer_only);
  static bool number_complete(const Frame& f);
  // Bounded numbers (JsonSchema::Node::bounded) keep their value in the frame: integer part in
  // `mask`, fraction digits in `seen` (`aux2` of them), integer digits in `aux`, sign in `key`.
  bool start_number(Frame& g, const JsonSchema::Node& n, uint8_t c) const;
  static bool number_feasible(const Frame& f, const JsonSchema::Node& n);
  bool number_value_ok(const Frame& f) const;
  // A value for `node` whose frame sits at stack index `at` can be completed within the stack.
  static bool fits(int32_t at, int32_t min_depth) { return at + min_depth <= kMaxDepth + 2; }
  bool property_fits(const JsonSchema::Node& object, int32_t property, int32_t at) const;
  // The schema node of a member's value: property >= 0 declared, -2 additional, -2 - S the keys
  // patternProperties set S matches.
  static int32_t member_node(const JsonSchema::Node& object, int32_t property);
  // An additional key with these automaton states can still be finished (some pattern or
  // additionalProperties takes it, with room for its value).
  bool key_may_finish(const JsonSchema::Node& object, uint64_t pat, int32_t at) const;
  int key_pattern_byte(const Frame& f, const JsonSchema::Node& object) const;
  int unique_item_start_byte(const Frame& array) const;
  bool literal_complete(const Frame& f) const;
  bool key_complete(const Frame& f, int32_t* property) const;
  bool object_may_close(const Frame& f) const;
  bool object_may_continue(const Frame& f) const;
  void child_done();
  // Pops the complete literal on top: child_done, then what its value decides in the parent
  // (an array with uniqueItems records it; a discriminated union becomes the tagged object).
  void literal_done();
  bool push(const Frame& f);
  std::string_view literal_text(const Frame& f, int i) const;
  int closing_byte() const;
  int value_start_byte(int32_t node, int32_t at) const;
  int literal_count(const Frame& f) const;

  std::shared_ptr<const JsonSchema> schema_;
  std::array<Frame, kMaxDepth + 2> stack_;
  int32_t depth_ = 0;  // frames in use
  int32_t ws_ = 0;     // consecutive whitespace bytes
};

}  // namespace tessera::engine
