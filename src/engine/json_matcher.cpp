#include "tessera/engine/json_matcher.h"

#include <algorithm>

#include "tessera/engine/json_matcher_states.h"

namespace tessera::engine {
namespace {

constexpr std::string_view kBuiltin[] = {"true", "false", "null"};
constexpr uint8_t kBuiltinLiterals = 1;  // Frame::aux of a literal: true/false/null

bool is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonSchema> schema) : schema_(std::move(schema)) {
  stack_[0] = Frame{};
  if (const RegexDfa* raw = schema_->raw()) {  // not JSON: the text walks the automaton
    stack_[0].kind = kRaw;
    stack_[0].key = raw->start();
    depth_ = 1;
    return;
  }
  stack_[0].kind = kRoot;
  stack_[1] = Frame{};
  stack_[1].kind = kValue;
  stack_[1].node = schema_->root();
  depth_ = 2;
}

void JsonMatcher::assign_state(const JsonMatcher& other) {
  std::copy_n(other.stack_.begin(), other.depth_, stack_.begin());
  depth_ = other.depth_;
  ws_ = other.ws_;
}

bool JsonMatcher::feed(uint8_t c) {
  JsonMatcher saved(schema_);
  saved.assign_state(*this);
  if (step(c)) return true;
  assign_state(saved);
  return false;
}

bool JsonMatcher::feed(std::string_view bytes) {
  JsonMatcher saved(schema_);
  saved.assign_state(*this);
  for (char ch : bytes) {
    if (!step(static_cast<uint8_t>(ch))) {
      assign_state(saved);
      return false;
    }
  }
  return true;
}

bool JsonMatcher::advance(uint8_t c) { return step(c); }

bool JsonMatcher::in_plain_string() const {
  const Frame& f = stack_[static_cast<size_t>(depth_ - 1)];
  if (f.aux != kPlain) return false;
  // A length-bounded string counts characters: tokens are walked byte by byte there.
  if (f.kind == kString) {
    const JsonSchema::Node& sn = schema_->node(f.node);
    return !sn.length_bounded() && !sn.pattern;
  }
  // A key no declared property still matches, in an object that takes additional properties
  // (json_object's keys, say): any plain content keeps it so.
  if (f.kind == kKey && f.mask == 0 && f.seen == 0 && depth_ >= 2) {
    const JsonSchema::Node& obj = schema_->node(stack_[static_cast<size_t>(depth_ - 2)].node);
    return obj.pattern_keys.empty() && property_fits(obj, -2, depth_ - 1);
  }
  return false;
}

std::optional<JsonMatcher::DfaPosition> JsonMatcher::dfa_position() const {
  const Frame& f = stack_[static_cast<size_t>(depth_ - 1)];
  if (f.kind == kRaw) return DfaPosition{schema_->raw(), static_cast<uint16_t>(f.key), true};
  if (f.kind != kString || f.aux != kPlain) return std::nullopt;
  const JsonSchema::Node& sn = schema_->node(f.node);
  if (!sn.pattern || sn.pattern_lengths) return std::nullopt;  // lengths: walked token by token
  return DfaPosition{sn.pattern.get(), static_cast<uint16_t>(f.key), false};
}

bool JsonMatcher::closed() const {
  if (stack_[0].kind == kRaw) {
    const auto st = static_cast<uint16_t>(stack_[0].key);
    return schema_->raw()->accepting(st) && !schema_->raw()->can_continue(st);
  }
  return depth_ == 1 && stack_[0].phase == 1;
}

bool JsonMatcher::complete() const {
  if (stack_[0].kind == kRaw) return schema_->raw()->accepting(static_cast<uint16_t>(stack_[0].key));
  if (closed()) return true;
  if (depth_ != 2) return false;
  const Frame& f = stack_[1];
  if (f.kind == kNumber) return number_complete(f) && number_value_ok(f);
  if (f.kind == kLiteral) return literal_complete(f);
  return false;
}

bool JsonMatcher::push(const Frame& f) {
  if (depth_ >= kMaxDepth + 2) return false;
  stack_[static_cast<size_t>(depth_++)] = f;
  return true;
}

std::string_view JsonMatcher::literal_text(const Frame& f, int i) const {
  if (f.aux == kBuiltinLiterals) return kBuiltin[i];
  return schema_->node(f.node).literals[static_cast<size_t>(i)];
}

int JsonMatcher::literal_count(const Frame& f) const {
  if (f.aux == kBuiltinLiterals) return 3;
  return static_cast<int>(schema_->node(f.node).literals.size());
}

bool JsonMatcher::literal_complete(const Frame& f) const {
  for (int i = 0; i < literal_count(f); ++i) {
    if ((f.mask >> i & 1) && static_cast<int32_t>(literal_text(f, i).size()) == f.count) return true;
  }
  return false;
}

bool JsonMatcher::number_complete(const Frame& f) {
  return f.phase == 1 || f.phase == 2 || f.phase == 4 || f.phase == 7;
}

bool JsonMatcher::object_may_close(const Frame& f) const {
  const JsonSchema::Node& n = schema_->node(f.node);
  if (f.count < n.min_properties) return false;
  const auto& props = n.properties;
  for (size_t i = 0; i < props.size(); ++i) {
    if (props[i].required && !(f.mask >> i & 1)) return false;
  }
  return true;
}

// Whether property `property` (-2: an additional one) of `object` may be written with its value's
// frame at stack index `at`.
bool JsonMatcher::property_fits(const JsonSchema::Node& object, int32_t property, int32_t at) const {
  const int32_t node = member_node(object, property);
  return node >= 0 && fits(at, schema_->node(node).min_depth);
}

int32_t JsonMatcher::member_node(const JsonSchema::Node& object, int32_t property) {
  if (property >= 0) return object.properties[static_cast<size_t>(property)].node;
  if (property == -2) return object.additional;
  return object.pattern_nodes[static_cast<size_t>(-3 - property)];
}

namespace {
uint16_t pattern_state(uint64_t pat, size_t i) { return static_cast<uint16_t>(pat >> (16 * i)); }
uint64_t with_pattern_state(uint64_t pat, size_t i, uint16_t state) {
  const uint64_t shift = 16 * i;
  return (pat & ~(uint64_t{0xFFFF} << shift)) | (uint64_t{state} << shift);
}
}  // namespace

bool JsonMatcher::key_may_finish(const JsonSchema::Node& object, uint64_t pat, int32_t at) const {
  if (property_fits(object, -2, at)) return true;
  for (size_t i = 0; i < object.pattern_keys.size(); ++i) {
    if (pattern_state(pat, i) != RegexDfa::kDead &&
        property_fits(object, -2 - (int32_t{1} << i), at)) {
      return true;
    }
  }
  return false;
}

// Another member may start: maxProperties leaves room, and an unseen declared property or an
// additional one fits (the frame `f` is the top of the stack).
bool JsonMatcher::object_may_continue(const Frame& f) const {
  const JsonSchema::Node& n = schema_->node(f.node);
  if (n.max_properties >= 0 && f.count >= n.max_properties) return false;
  if (key_may_finish(n, 0, depth_)) return true;  // every automaton starts in state 0
  for (size_t i = 0; i < n.properties.size(); ++i) {
    if (!(f.mask >> i & 1) && property_fits(n, static_cast<int32_t>(i), depth_)) return true;
  }
  return false;
}

// A key is complete (its closing quote may come) when it names an unseen declared property
// exactly, or when additional properties are allowed and it is not a declared one seen before
// (a duplicate). Keys are compared as written (escapes included).
bool JsonMatcher::key_complete(const Frame& f, int32_t* property) const {
  const Frame& obj = stack_[static_cast<size_t>(depth_ - 2)];
  const JsonSchema::Node& n = schema_->node(obj.node);
  for (size_t i = 0; i < n.properties.size(); ++i) {
    if (static_cast<int32_t>(n.properties[i].key.size()) != f.count) continue;
    if (f.mask >> i & 1) {
      *property = static_cast<int32_t>(i);
      return true;
    }
    if (f.seen >> i & 1) return false;
  }
  // Not a declared name: the patterns it matches, else additionalProperties.
  int32_t set = 0;
  for (size_t i = 0; i < n.pattern_keys.size(); ++i) {
    if (n.pattern_keys[i]->accepting(pattern_state(f.pat, i))) set |= int32_t{1} << i;
  }
  const int32_t p = set == 0 ? -2 : -2 - set;
  if (!property_fits(n, p, depth_ - 1)) return false;
  *property = p;
  return true;
}

void JsonMatcher::child_done() {
  Frame& p = stack_[static_cast<size_t>(depth_ - 1)];
  switch (p.kind) {
    case kRoot:
      p.phase = 1;
      break;
    case kObject:
      if (p.key >= 0) p.mask |= uint64_t{1} << p.key;
      ++p.count;
      p.phase = kAfter;
      break;
    case kArray:
      p.phase = kAfter;
      break;
    default:
      break;
  }
}

bool JsonMatcher::start_value(int32_t node, uint8_t c) {
  const JsonSchema::Node& n = schema_->node(node);
  // anyOf/oneOf: the alternatives start with different bytes; the first byte picks one.
  for (int32_t a : n.alternatives) {
    if (start_value(a, c)) return true;
  }
  if (!n.alternatives.empty()) return false;
  const int32_t at = depth_ - 1;
  Frame& f = stack_[static_cast<size_t>(at)];  // the kValue frame, replaced
  Frame g;
  g.node = node;
  if (!n.literals.empty()) {
    g.kind = kLiteral;
    for (size_t i = 0; i < n.literals.size(); ++i) {
      if (static_cast<uint8_t>(n.literals[i][0]) == c) g.mask |= uint64_t{1} << i;
    }
    // An item of an array with uniqueItems: none written before.
    if (const Frame& parent = stack_[static_cast<size_t>(at - 1)];
        at >= 1 && parent.kind == kArray && schema_->node(parent.node).unique_items) {
      g.mask &= ~parent.mask;
    }
    if (g.mask == 0) return false;
    g.count = 1;
    f = g;
    return true;
  }
  const uint8_t t = n.types;
  if (c == '{' && (t & JsonSchema::kObject) && fits(at, n.min_depth_object)) {
    g.kind = kObject;
    g.phase = kOpen;
    // Forbidden properties count as seen: their keys are refused as duplicates are.
    for (size_t i = 0; i < n.properties.size(); ++i) {
      if (n.properties[i].forbidden) g.mask |= uint64_t{1} << i;
    }
  } else if (c == '[' && (t & JsonSchema::kArray) && fits(at, n.min_depth_array)) {
    g.kind = kArray;
    g.phase = kOpen;
  } else if (c == '"' && (t & JsonSchema::kString)) {
    g.kind = kString;
    g.key = n.pattern ? n.pattern->start() : 0;
  } else if ((c == '-' || is_digit(c)) && (t & (JsonSchema::kInteger | JsonSchema::kNumber))) {
    if (!start_number(g, n, c)) return false;
  } else if ((c == 't' || c == 'f') && (t & JsonSchema::kBoolean)) {
    g.kind = kLiteral;
    g.aux = kBuiltinLiterals;
    g.mask = c == 't' ? 1 : 2;
    g.count = 1;
  } else if (c == 'n' && (t & JsonSchema::kNull)) {
    g.kind = kLiteral;
    g.aux = kBuiltinLiterals;
    g.mask = 4;
    g.count = 1;
  } else {
    return false;
  }
  f = g;
  return true;
}

// One byte inside a string (value or key) after its opening quote. Sets `closed` on the closing
// quote.
bool JsonMatcher::string_byte(Frame& f, uint8_t c, bool& closed) {
  closed = false;
  switch (f.aux) {
    case kPlain:
      if (c == '"') {
        closed = true;
        return true;
      }
      if (c == '\\') {
        f.aux = kEscape;
        return true;
      }
      if (c < 0x20) return false;
      if (c < 0x80) return true;
      // UTF-8 lead byte: continuation count and the first continuation's range.
      if (c >= 0xC2 && c <= 0xDF) {
        f.aux2 = 1;
        f.phase = 0;
      } else if (c >= 0xE0 && c <= 0xEF) {
        f.aux2 = 2;
        f.phase = c == 0xE0 ? 1 : c == 0xED ? 2 : 0;
      } else if (c >= 0xF0 && c <= 0xF4) {
        f.aux2 = 3;
        f.phase = c == 0xF0 ? 3 : c == 0xF4 ? 4 : 0;
      } else {
        return false;
      }
      f.aux = kUtf8;
      return true;
    case kEscape:
      if (c == 'u') {
        f.aux = kUnicode;
        f.aux2 = 0;
        f.phase = 0;
        return true;
      }
      if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
          c == 't') {
        f.aux = kPlain;
        return true;
      }
      return false;
    case kUnicode:
      if (!is_hex(c)) return false;
      // No surrogate escapes (\uD800-\uDFFF): strict parsers refuse unpaired ones, and raw UTF-8
      // says the same.
      if (f.aux2 == 0 && (c == 'd' || c == 'D')) f.phase = 5;
      else if (f.aux2 == 1 && f.phase == 5 && !(c >= '0' && c <= '7')) return false;
      if (++f.aux2 == 4) {
        f.aux = kPlain;
        f.phase = 0;
      }
      return true;
    case kUtf8: {
      uint8_t lo = 0x80, hi = 0xBF;
      if (f.phase == 1) lo = 0xA0;
      if (f.phase == 2) hi = 0x9F;
      if (f.phase == 3) lo = 0x90;
      if (f.phase == 4) hi = 0x8F;
      if (c < lo || c > hi) return false;
      f.phase = 0;
      if (--f.aux2 == 0) f.aux = kPlain;
      return true;
    }
    default:
      return false;
  }
}

bool JsonMatcher::start_number(Frame& g, const JsonSchema::Node& n, uint8_t c) const {
  g.kind = kNumber;
  g.phase = c == '-' ? 0 : c == '0' ? 1 : 2;
  g.count = 1;
  if (!n.bounded) return true;
  g.key = c == '-' ? 1 : 0;
  g.mask = c == '-' ? 0 : static_cast<uint64_t>(c - '0');
  g.aux = c == '-' ? 0 : 1;
  g.seen = 0;
  g.aux2 = 0;
  return number_feasible(g, n);
}

namespace {
using Fixed = JsonSchema::Fixed;
Fixed pow10_fixed(int n) {
  Fixed p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}
Fixed floor_div(Fixed a, Fixed b) {  // b > 0
  Fixed q = a / b;
  if ((a % b != 0) && (a < 0)) --q;
  return q;
}
// [lo, hi] (inclusive) and [a, b] share a value (a multiple of m when m > 0).
bool meets(Fixed a, Fixed b, Fixed lo, Fixed hi, int64_t m) {
  const Fixed x = std::max(a, lo), y = std::min(b, hi);
  if (x > y) return false;
  if (m <= 0) return true;
  return floor_div(y, m) * m >= x;
}
}  // namespace

// Some number the frame's text extends to (without an exponent, within the digit limits) lies in
// the node's bounds and is a multiple of multipleOf.
bool JsonMatcher::number_feasible(const Frame& f, const JsonSchema::Node& n) {
  const int digits = n.integer_only() ? 0 : JsonSchema::kFractionDigits;
  const Fixed scale = pow10_fixed(digits);
  const auto ip = static_cast<Fixed>(f.mask);
  const bool neg = f.key == 1;
  auto check = [&](Fixed a, Fixed b) {  // magnitudes [a, b]
    return neg ? meets(-b, -a, n.lo, n.hi, n.multiple_of) : meets(a, b, n.lo, n.hi, n.multiple_of);
  };
  switch (f.phase) {
    case 0:  // '-' alone: any magnitude
      return check(0, pow10_fixed(JsonSchema::kMaxIntegerDigits) * scale - 1);
    case 1:  // "0": 0 or 0.xxx
      return check(0, scale - 1);
    case 2:  // integer digits: k more digits, then maybe a fraction
      for (int k = 0; k + f.aux <= JsonSchema::kMaxIntegerDigits; ++k) {
        const Fixed p = pow10_fixed(k);
        if (check(ip * p * scale, (ip + 1) * p * scale - 1)) return true;
      }
      return false;
    case 3:  // after '.'
      return check(ip * scale, ip * scale + scale - 1);
    case 4: {  // fraction digits
      const Fixed unit = pow10_fixed(digits - f.aux2);
      const Fixed v = ip * scale + static_cast<Fixed>(f.seen) * unit;
      return check(v, v + unit - 1);
    }
    default:
      return false;
  }
}

bool JsonMatcher::number_value_ok(const Frame& f) const {
  const JsonSchema::Node& n = schema_->node(f.node);
  if (!n.bounded) return true;
  const int digits = n.integer_only() ? 0 : JsonSchema::kFractionDigits;
  Fixed v = static_cast<Fixed>(f.mask) * pow10_fixed(digits) +
            static_cast<Fixed>(f.seen) * pow10_fixed(digits - f.aux2);
  if (f.key == 1) v = -v;
  if (v < n.lo || v > n.hi) return false;
  return n.multiple_of <= 0 || v % n.multiple_of == 0;
}

namespace {
// The value byte a JSON escape letter stands for (\u aside); -1 for none.
int escaped_value(uint8_t letter) {
  switch (letter) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return -1;
  }
}
constexpr std::string_view kEscapeLetters = "\"\\/bfnrt";
}  // namespace

bool JsonMatcher::pattern_step(const Frame& f, const RegexDfa& dfa, uint8_t c, uint16_t* next) {
  const auto state = static_cast<uint16_t>(f.key);
  *next = state;
  switch (f.aux) {
    case kPlain:
      if (c == '"') return dfa.accepting(state);
      if (c == '\\') {  // some escape must keep the value matchable (\u is not taken here)
        for (uint8_t l : kEscapeLetters) {
          if (dfa.next(state, static_cast<uint8_t>(escaped_value(l))) != RegexDfa::kDead) return true;
        }
        return false;
      }
      *next = dfa.next(state, c);
      return *next != RegexDfa::kDead;
    case kUtf8:
      *next = dfa.next(state, c);
      return *next != RegexDfa::kDead;
    case kEscape: {
      const int v = escaped_value(c);
      if (v < 0) return false;
      *next = dfa.next(state, static_cast<uint8_t>(v));
      return *next != RegexDfa::kDead;
    }
    default:
      return false;
  }
}

// The next byte toward a string value the pattern accepts: the closing quote once it does, an
// escape for a byte JSON escapes, the escape letter inside one.
int JsonMatcher::pattern_closing_byte(const Frame& f, const RegexDfa& dfa) {
  const auto state = static_cast<uint16_t>(f.key);
  if (f.aux == kEscape) {
    int best = -1, best_dist = 0;
    for (uint8_t l : kEscapeLetters) {
      const uint16_t t = dfa.next(state, static_cast<uint8_t>(escaped_value(l)));
      if (t != RegexDfa::kDead && (best < 0 || dfa.distance(t) < best_dist)) {
        best = l;
        best_dist = dfa.distance(t);
      }
    }
    return best < 0 ? -2 : best;
  }
  if (f.aux == kPlain && dfa.accepting(state)) return '"';
  const uint8_t b = dfa.toward_accept(state);
  if (f.aux == kPlain && (b == '"' || b == '\\' || b < 0x20)) return '\\';
  return b;
}

bool JsonMatcher::number_byte(Frame& f, uint8_t c, bool integer_only) {
  const JsonSchema::Node& n = schema_->node(f.node);
  if (n.bounded) {
    Frame g = f;
    switch (f.phase) {
      case 0:
        if (!is_digit(c)) return false;
        g.phase = c == '0' ? 1 : 2;
        g.mask = static_cast<uint64_t>(c - '0');
        g.aux = 1;
        break;
      case 1:
      case 2:
        if (c == '.' && !integer_only) {
          g.phase = 3;
        } else if (is_digit(c) && f.phase == 2 && f.aux < JsonSchema::kMaxIntegerDigits) {
          g.mask = f.mask * 10 + static_cast<uint64_t>(c - '0');
          ++g.aux;
        } else {
          return false;
        }
        break;
      case 3:
      case 4:
        if (!is_digit(c) || f.aux2 >= JsonSchema::kFractionDigits) return false;
        g.phase = 4;
        g.seen = f.seen * 10 + static_cast<uint64_t>(c - '0');
        ++g.aux2;
        break;
      default:
        return false;
    }
    if (!number_feasible(g, n)) return false;
    ++g.count;
    f = g;
    return true;
  }
  uint8_t next = 255;
  switch (f.phase) {
    case 0:  // after '-'
      if (c == '0') next = 1;
      else if (is_digit(c)) next = 2;
      break;
    case 1:  // "0"
      if (c == '.' && !integer_only) next = 3;
      else if ((c == 'e' || c == 'E') && !integer_only) next = 5;
      break;
    case 2:  // integer digits
      if (is_digit(c)) next = 2;
      else if (c == '.' && !integer_only) next = 3;
      else if ((c == 'e' || c == 'E') && !integer_only) next = 5;
      break;
    case 3:  // after '.'
      if (is_digit(c)) next = 4;
      break;
    case 4:  // fraction digits
      if (is_digit(c)) next = 4;
      else if (c == 'e' || c == 'E') next = 5;
      break;
    case 5:  // after 'e'
      if (c == '+' || c == '-') next = 6;
      else if (is_digit(c)) next = 7;
      break;
    case 6:  // after the exponent's sign
    case 7:
      if (is_digit(c) && f.aux < kMaxExponentDigits) next = 7;
      break;
  }
  if (next == 255) return false;
  // Past the length limit a number may only finish a part it started (a digit after '.', 'e' or
  // a sign), so it can always end.
  const int32_t limit = integer_only ? kMaxIntegerBytes : kMaxNumberBytes;
  if (number_complete(f) && f.count >= limit) return false;
  if (next == 7) ++f.aux;  // exponent digits
  f.phase = next;
  ++f.count;
  return true;
}

// Whitespace between tokens, as llama.cpp's JSON grammars allow it: one space or tab, or a
// newline followed by at most kMaxIndent spaces or tabs. ws_ counts the run's bytes, negated
// when it began with a newline.
bool JsonMatcher::take_ws(uint8_t c) {
  if (c == '\r') return false;
  if (ws_ == 0) {
    ws_ = c == '\n' ? -1 : 1;
    return true;
  }
  if (ws_ > 0 || c == '\n' || -ws_ > kMaxIndent) return false;
  --ws_;
  return true;
}

bool JsonMatcher::step(uint8_t c) {
  const bool ws = is_ws(c);
  for (;;) {
    Frame& f = stack_[static_cast<size_t>(depth_ - 1)];
    Step r = Step::kRefused;
    switch (f.kind) {
      case kRaw: {
        const uint16_t next = schema_->raw()->next(static_cast<uint16_t>(f.key), c);
        if (next == RegexDfa::kDead) return false;
        f.key = next;
        return true;
      }
      case kRoot:
        return f.phase == 1 && ws && take_ws(c);
      case kValue:
        if (ws) return take_ws(c);
        ws_ = 0;
        return start_value(f.node, c);
      case kString: r = string_step(f, c); break;
      case kKey: r = key_step(f, c); break;
      case kNumber: r = number_step(f, c); break;
      case kLiteral: r = literal_step(f, c); break;
      case kObject: r = object_step(f, c, ws); break;
      case kArray: r = array_step(f, c, ws); break;
    }
    if (r != Step::kAgain) return r == Step::kTaken;
  }
}

// A byte inside a value string: length bounds, the pattern's automaton, JSON's string rules.
JsonMatcher::Step JsonMatcher::string_step(Frame& f, uint8_t c) {
  const JsonSchema::Node& sn = schema_->node(f.node);
  if (sn.pattern_lengths) return pattern_length_step(f, *sn.pattern_lengths, c);
  // minLength/maxLength: a character starts at a byte read between characters (ASCII,
  // a UTF-8 lead byte or a backslash); the closing quote needs minLength of them.
  if (f.aux == kPlain && sn.length_bounded()) {
    if (c == '"') {
      if (f.count < sn.min_length) return Step::kRefused;
    } else {
      if (sn.max_length >= 0 && f.count >= sn.max_length) return Step::kRefused;
      ++f.count;
    }
  }
  // pattern: the value's bytes (escapes decoded) walk the automaton, kept in f.key.
  uint16_t next_state = 0;
  if (sn.pattern && !pattern_step(f, *sn.pattern, c, &next_state)) return Step::kRefused;
  bool closed = false;
  if (!string_byte(f, c, closed)) return Step::kRefused;
  if (sn.pattern) f.key = next_state;
  ws_ = 0;
  if (closed) {
    --depth_;
    child_done();
  }
  return Step::kTaken;
}

// A byte of a string with a pattern and length bounds: taken only where some completion of an
// allowed length still matches (PatternLengths).
JsonMatcher::Step JsonMatcher::pattern_length_step(Frame& f, const PatternLengths& pl, uint8_t c) {
  const RegexDfa& dfa = pl.dfa();
  uint16_t next_state = 0;
  if (!pattern_step(f, dfa, c, &next_state)) return Step::kRefused;
  Frame probe = f;
  bool closed = false;
  if (!string_byte(probe, c, closed)) return Step::kRefused;
  const int64_t count = f.count + (f.aux == kPlain && c != '"' ? 1 : 0);
  const int64_t lo = schema_->node(f.node).min_length, hi = schema_->node(f.node).max_length;
  bool ok = false;
  if (closed) {
    ok = count >= lo && (hi < 0 || count <= hi);
  } else if (f.aux == kPlain && c == '\\') {
    for (uint8_t l : kEscapeLetters) {
      const uint16_t t = dfa.next(next_state, static_cast<uint8_t>(escaped_value(l)));
      ok = ok || pl.feasible(t, 0, count);
    }
  } else {
    const uint8_t phase = probe.aux == kUtf8 ? PatternLengths::phase(probe.aux2, probe.phase) : 0;
    ok = pl.feasible(next_state, phase, count);
  }
  if (!ok) return Step::kRefused;
  f = probe;
  f.key = next_state;
  f.count = static_cast<int32_t>(count);
  ws_ = 0;
  if (closed) {
    --depth_;
    child_done();
  }
  return Step::kTaken;
}

// The next byte toward a string of an allowed length that matches: the value byte the table
// chooses, escaped where JSON needs it.
int JsonMatcher::pattern_length_closing_byte(const Frame& f, const PatternLengths& pl) {
  const auto state = static_cast<uint16_t>(f.key);
  if (f.aux == kEscape) {  // the character chosen before the backslash, counted already
    const int b = pl.next_value_byte(state, 0, f.count - 1);
    for (uint8_t l : kEscapeLetters) {
      if (escaped_value(l) == b) return l;
    }
    return -2;
  }
  const uint8_t phase = f.aux == kUtf8 ? PatternLengths::phase(f.aux2, f.phase) : 0;
  const int b = pl.next_value_byte(state, phase, f.count);
  if (b == -1) return '"';
  if (b < 0) return -2;
  if (f.aux == kPlain && (b == '"' || b == '\\' || b < 0x20)) return '\\';
  return b;
}

// A byte of an object key: declared keys still matching, or an additional one.
JsonMatcher::Step JsonMatcher::key_step(Frame& f, uint8_t c) {
  // Escapes as a JSON writer writes them, so that a key's text names its value exactly: no "\/",
  // \u00XX only for the control characters without a short escape, in lowercase.
  if (f.aux == kEscape && c == '/') return Step::kRefused;
  if (f.aux == kUnicode) {
    const bool ok = f.aux2 <= 1   ? c == '0'
                    : f.aux2 == 2 ? (c == '0' || c == '1')
                                  : (is_digit(c) || (c >= 'a' && c <= 'f')) &&
                                        (f.phase == 6 || !(c == '8' || c == '9' || c == 'a' ||
                                                           c == 'c' || c == 'd'));
    if (!ok) return Step::kRefused;
  }
  const JsonSchema::Node& n = schema_->node(stack_[static_cast<size_t>(depth_ - 2)].node);
  // \u escapes are not decoded for patterns: not taken in their objects' keys.
  if (f.aux == kEscape && c == 'u' && !n.pattern_keys.empty()) return Step::kRefused;
  // patternProperties: each automaton walks the key's value bytes (escapes decoded).
  uint64_t pat = f.pat;
  for (size_t i = 0; i < n.pattern_keys.size(); ++i) {
    const RegexDfa& dfa = *n.pattern_keys[i];
    const uint16_t st = pattern_state(pat, i);
    uint16_t next = st;
    if (f.aux == kUtf8 || (f.aux == kPlain && c != '"' && c != '\\')) {
      next = dfa.next(st, c);
    } else if (f.aux == kPlain && c == '\\') {
      // Alive while some escape a key may use (not \/ nor \u) keeps it so.
      next = RegexDfa::kDead;
      for (uint8_t l : std::string_view("\"\\bfnrt")) {
        if (dfa.next(st, static_cast<uint8_t>(escaped_value(l))) != RegexDfa::kDead) next = st;
      }
    } else if (f.aux == kEscape) {
      const int v = escaped_value(c);
      if (v >= 0) next = dfa.next(st, static_cast<uint8_t>(v));
    }
    pat = with_pattern_state(pat, i, next);
  }
  bool closed = false;
  Frame probe = f;
  if (!string_byte(probe, c, closed)) return Step::kRefused;
  if (f.aux == kUnicode && f.aux2 == 2 && c == '1') probe.phase = 6;  // \u001X: any last digit
  if (closed) {
    int32_t property = -1;
    if (!key_complete(f, &property)) return Step::kRefused;
    --depth_;
    Frame& obj = stack_[static_cast<size_t>(depth_ - 1)];
    obj.key = property;
    obj.phase = kColon;
    ws_ = 0;
    return Step::kTaken;
  }
  // Declared keys still matching after this byte (compared as written, escapes included).
  uint64_t alive = 0, seen = 0;
  for (size_t i = 0; i < n.properties.size(); ++i) {
    const bool unseen = f.mask >> i & 1, dup = f.seen >> i & 1;
    if (!unseen && !dup) continue;
    const std::string& k = n.properties[i].key;
    if (static_cast<size_t>(f.count) < k.size() && static_cast<uint8_t>(k[f.count]) == c) {
      (unseen ? alive : seen) |= uint64_t{1} << i;
    }
  }
  if (alive == 0 && !key_may_finish(n, pat, depth_ - 1)) return Step::kRefused;
  probe.mask = alive;
  probe.seen = seen;
  probe.pat = pat;
  ++probe.count;
  f = probe;
  ws_ = 0;
  return Step::kTaken;
}

// A byte of a number, or the parent's first byte once the number is complete.
JsonMatcher::Step JsonMatcher::number_step(Frame& f, uint8_t c) {
  const bool integer_only = !(schema_->node(f.node).types & JsonSchema::kNumber);
  if (number_byte(f, c, integer_only)) {
    ws_ = 0;
    return Step::kTaken;
  }
  if (!number_complete(f) || !number_value_ok(f)) return Step::kRefused;
  --depth_;
  child_done();
  return Step::kAgain;  // the byte belongs to the parent
}

// A byte of an enum/const text or true/false/null, or the parent's once one is complete.
JsonMatcher::Step JsonMatcher::literal_step(Frame& f, uint8_t c) {
  uint64_t alive = 0;
  for (int i = 0; i < literal_count(f); ++i) {
    if (!(f.mask >> i & 1)) continue;
    const std::string_view t = literal_text(f, i);
    if (static_cast<size_t>(f.count) < t.size() && static_cast<uint8_t>(t[f.count]) == c) {
      alive |= uint64_t{1} << i;
    }
  }
  if (alive != 0) {
    f.mask = alive;
    ++f.count;
    ws_ = 0;
    return Step::kTaken;
  }
  if (!literal_complete(f)) return Step::kRefused;
  literal_done();
  return Step::kAgain;
}

void JsonMatcher::literal_done() {
  const Frame& f = stack_[static_cast<size_t>(depth_ - 1)];
  int written = -1;  // which literal of the node's
  for (int i = 0; i < literal_count(f) && f.aux != kBuiltinLiterals; ++i) {
    if ((f.mask >> i & 1) && static_cast<int32_t>(literal_text(f, i).size()) == f.count) written = i;
  }
  --depth_;
  child_done();
  Frame& p = stack_[static_cast<size_t>(depth_ - 1)];
  if (written < 0 || (p.kind != kArray && p.kind != kObject)) return;
  const JsonSchema::Node& pn = schema_->node(p.node);
  if (p.kind == kArray && pn.unique_items) {
    p.mask |= uint64_t{1} << written;
  } else if (p.kind == kObject && !pn.tag_alternatives.empty()) {
    // The tag is read: the object is the alternative it names, the tag property seen.
    const int32_t alt = pn.tag_alternatives[static_cast<size_t>(written)];
    const JsonSchema::Node& an = schema_->node(alt);
    p.node = alt;
    p.mask = 0;
    for (size_t i = 0; i < an.properties.size(); ++i) {
      if (an.properties[i].forbidden || an.properties[i].key == pn.properties[0].key) {
        p.mask |= uint64_t{1} << i;
      }
    }
  }
}

// A byte between an object's members: a key, the colon, a comma, the closing brace.
JsonMatcher::Step JsonMatcher::object_step(Frame& f, uint8_t c, bool ws) {
  if (ws) return take_ws(c) ? Step::kTaken : Step::kRefused;
  const JsonSchema::Node& n = schema_->node(f.node);
  if (c == '"' && (f.phase == kOpen || f.phase == kComma) && object_may_continue(f)) {
    Frame k;
    k.kind = kKey;
    k.node = f.node;
    for (size_t i = 0; i < n.properties.size(); ++i) {
      // Seen ones, and ones whose value would not fit, are refused as duplicates are.
      const bool open = !(f.mask >> i & 1) && property_fits(n, static_cast<int32_t>(i), depth_);
      (open ? k.mask : k.seen) |= uint64_t{1} << i;
    }
    if (!push(k)) return Step::kRefused;
    ws_ = 0;
    return Step::kTaken;
  }
  if (c == ':' && f.phase == kColon) {
    Frame v;
    v.kind = kValue;
    v.node = member_node(n, f.key);
    if (!push(v)) return Step::kRefused;
    f.phase = kInside;
    ws_ = 0;
    return Step::kTaken;
  }
  if (c == ',' && f.phase == kAfter && object_may_continue(f)) {
    f.phase = kComma;
    ws_ = 0;
    return Step::kTaken;
  }
  if (c == '}' && (f.phase == kOpen || f.phase == kAfter) && object_may_close(f)) {
    --depth_;
    child_done();
    ws_ = 0;
    return Step::kTaken;
  }
  return Step::kRefused;
}

// A byte between an array's items: a comma, the closing bracket, or an item's first byte.
JsonMatcher::Step JsonMatcher::array_step(Frame& f, uint8_t c, bool ws) {
  if (ws) return take_ws(c) ? Step::kTaken : Step::kRefused;
  const JsonSchema::Node& n = schema_->node(f.node);
  // The next item's node (prefixItems, then items) must fit above this frame.
  const bool room = (n.max_items < 0 || f.count < n.max_items) &&
                    fits(depth_, schema_->node(n.item_node(f.count)).min_depth);
  if (c == ']' && ((f.phase == kOpen && n.min_items == 0) ||
                   (f.phase == kAfter && f.count >= n.min_items))) {
    --depth_;
    child_done();
    ws_ = 0;
    return Step::kTaken;
  }
  if (c == ',' && f.phase == kAfter && room) {
    f.phase = kComma;
    ws_ = 0;
    return Step::kTaken;
  }
  if ((f.phase == kOpen || f.phase == kComma) && room) {
    Frame v;
    v.kind = kValue;
    v.node = n.item_node(f.count);
    if (depth_ >= kMaxDepth + 2) return Step::kRefused;
    ++f.count;
    f.phase = kInside;
    push(v);
    return Step::kAgain;  // the byte starts the item
  }
  return Step::kRefused;
}

}  // namespace tessera::engine
