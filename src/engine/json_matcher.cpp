#include "tessera/engine/json_matcher.h"

#include <algorithm>

namespace tessera::engine {
namespace {

constexpr std::string_view kBuiltin[] = {"true", "false", "null"};
constexpr uint8_t kBuiltinLiterals = 1;  // Frame::aux of a literal: true/false/null

// Object and array phases.
enum : uint8_t { kOpen = 0, kColon = 1, kInside = 2, kAfter = 3, kComma = 4 };
// String aux states.
enum : uint8_t { kPlain = 0, kEscape = 1, kUnicode = 2, kUtf8 = 3 };

bool is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonSchema> schema) : schema_(std::move(schema)) {
  stack_[0] = Frame{};
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
  if (f.kind == kString) return !schema_->node(f.node).length_bounded();
  // A key no declared property still matches, in an object that takes additional properties
  // (json_object's keys, say): any plain content keeps it so.
  if (f.kind == kKey && f.mask == 0 && f.seen == 0 && depth_ >= 2) {
    return schema_->node(stack_[static_cast<size_t>(depth_ - 2)].node).additional >= 0;
  }
  return false;
}

bool JsonMatcher::closed() const { return depth_ == 1 && stack_[0].phase == 1; }

bool JsonMatcher::complete() const {
  if (closed()) return true;
  if (depth_ != 2) return false;
  const Frame& f = stack_[1];
  if (f.kind == kNumber) return number_complete(f);
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
  const auto& props = schema_->node(f.node).properties;
  for (size_t i = 0; i < props.size(); ++i) {
    if (props[i].required && !(f.mask >> i & 1)) return false;
  }
  return true;
}

bool JsonMatcher::object_may_continue(const Frame& f) const {
  const JsonSchema::Node& n = schema_->node(f.node);
  if (n.additional >= 0) return true;
  for (size_t i = 0; i < n.properties.size(); ++i) {
    if (!(f.mask >> i & 1)) return true;
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
  if (n.additional < 0) return false;
  *property = -2;
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
  Frame& f = stack_[static_cast<size_t>(depth_ - 1)];  // the kValue frame, replaced
  Frame g;
  g.node = node;
  if (!n.literals.empty()) {
    g.kind = kLiteral;
    for (size_t i = 0; i < n.literals.size(); ++i) {
      if (static_cast<uint8_t>(n.literals[i][0]) == c) g.mask |= uint64_t{1} << i;
    }
    if (g.mask == 0) return false;
    g.count = 1;
    f = g;
    return true;
  }
  const uint8_t t = n.types;
  if (c == '{' && (t & JsonSchema::kObject)) {
    g.kind = kObject;
    g.phase = kOpen;
  } else if (c == '[' && (t & JsonSchema::kArray)) {
    g.kind = kArray;
    g.phase = kOpen;
  } else if (c == '"' && (t & JsonSchema::kString)) {
    g.kind = kString;
  } else if ((c == '-' || is_digit(c)) && (t & (JsonSchema::kInteger | JsonSchema::kNumber))) {
    g.kind = kNumber;
    g.phase = c == '-' ? 0 : c == '0' ? 1 : 2;
    g.count = 1;
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

bool JsonMatcher::number_byte(Frame& f, uint8_t c, bool integer_only) {
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
    switch (f.kind) {
      case kRoot:
        return f.phase == 1 && ws && take_ws(c);
      case kValue:
        if (ws) return take_ws(c);
        ws_ = 0;
        return start_value(f.node, c);
      case kString: {
        // minLength/maxLength: a character starts at a byte read between characters (ASCII,
        // a UTF-8 lead byte or a backslash); the closing quote needs minLength of them.
        const JsonSchema::Node& sn = schema_->node(f.node);
        if (f.aux == kPlain && sn.length_bounded()) {
          if (c == '"') {
            if (f.count < sn.min_length) return false;
          } else {
            if (sn.max_length >= 0 && f.count >= sn.max_length) return false;
            ++f.count;
          }
        }
        bool closed = false;
        if (!string_byte(f, c, closed)) return false;
        ws_ = 0;
        if (closed) {
          --depth_;
          child_done();
        }
        return true;
      }
      case kKey: {
        bool closed = false;
        Frame probe = f;
        if (!string_byte(probe, c, closed)) return false;
        if (closed) {
          int32_t property = -1;
          if (!key_complete(f, &property)) return false;
          --depth_;
          Frame& obj = stack_[static_cast<size_t>(depth_ - 1)];
          obj.key = property;
          obj.phase = kColon;
          ws_ = 0;
          return true;
        }
        // Declared keys still matching after this byte (compared as written, escapes included).
        const JsonSchema::Node& n = schema_->node(stack_[static_cast<size_t>(depth_ - 2)].node);
        uint64_t alive = 0, seen = 0;
        for (size_t i = 0; i < n.properties.size(); ++i) {
          const bool unseen = f.mask >> i & 1, dup = f.seen >> i & 1;
          if (!unseen && !dup) continue;
          const std::string& k = n.properties[i].key;
          if (static_cast<size_t>(f.count) < k.size() && static_cast<uint8_t>(k[f.count]) == c) {
            (unseen ? alive : seen) |= uint64_t{1} << i;
          }
        }
        if (alive == 0 && n.additional < 0) return false;
        probe.mask = alive;
        probe.seen = seen;
        ++probe.count;
        f = probe;
        ws_ = 0;
        return true;
      }
      case kNumber: {
        const bool integer_only = !(schema_->node(f.node).types & JsonSchema::kNumber);
        if (number_byte(f, c, integer_only)) {
          ws_ = 0;
          return true;
        }
        if (!number_complete(f)) return false;
        --depth_;
        child_done();
        continue;  // the byte belongs to the parent
      }
      case kLiteral: {
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
          return true;
        }
        if (!literal_complete(f)) return false;
        --depth_;
        child_done();
        continue;
      }
      case kObject: {
        if (ws) return take_ws(c);
        const JsonSchema::Node& n = schema_->node(f.node);
        if (c == '"' && (f.phase == kOpen || f.phase == kComma) && object_may_continue(f)) {
          Frame k;
          k.kind = kKey;
          k.node = f.node;
          for (size_t i = 0; i < n.properties.size(); ++i) {
            (f.mask >> i & 1 ? k.seen : k.mask) |= uint64_t{1} << i;
          }
          if (!push(k)) return false;
          ws_ = 0;
          return true;
        }
        if (c == ':' && f.phase == kColon) {
          Frame v;
          v.kind = kValue;
          v.node = f.key >= 0 ? n.properties[static_cast<size_t>(f.key)].node : n.additional;
          if (!push(v)) return false;
          f.phase = kInside;
          ws_ = 0;
          return true;
        }
        if (c == ',' && f.phase == kAfter && object_may_continue(f)) {
          f.phase = kComma;
          ws_ = 0;
          return true;
        }
        if (c == '}' && (f.phase == kOpen || f.phase == kAfter) && object_may_close(f)) {
          --depth_;
          child_done();
          ws_ = 0;
          return true;
        }
        return false;
      }
      case kArray: {
        if (ws) return take_ws(c);
        const JsonSchema::Node& n = schema_->node(f.node);
        const bool room = n.max_items < 0 || f.count < n.max_items;
        if (c == ']' && ((f.phase == kOpen && n.min_items == 0) ||
                         (f.phase == kAfter && f.count >= n.min_items))) {
          --depth_;
          child_done();
          ws_ = 0;
          return true;
        }
        if (c == ',' && f.phase == kAfter && room) {
          f.phase = kComma;
          ws_ = 0;
          return true;
        }
        if ((f.phase == kOpen || f.phase == kComma) && room) {
          Frame v;
          v.kind = kValue;
          v.node = n.items;
          if (depth_ >= kMaxDepth + 2) return false;
          ++f.count;
          f.phase = kInside;
          push(v);
          continue;  // the byte starts the item
        }
        return false;
      }
    }
    return false;
  }
}

}  // namespace tessera::engine

namespace tessera::engine {

// The first byte of a short value for schema node `node`: the shortest kind the node allows
// (a number's "0", an unbounded string's "", an empty array or object where nothing is required,
// then the literals), -2 when the node allows nothing.
int JsonMatcher::value_start_byte(int32_t node) const {
  const JsonSchema::Node& n = schema_->node(node);
  if (!n.literals.empty()) {
    const auto shortest = std::min_element(
        n.literals.begin(), n.literals.end(),
        [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
    return static_cast<uint8_t>((*shortest)[0]);
  }
  const uint8_t t = n.types;
  bool any_required = false;
  for (const auto& p : n.properties) any_required |= p.required;
  if (t & (JsonSchema::kInteger | JsonSchema::kNumber)) return '0';
  if ((t & JsonSchema::kString) && n.min_length == 0) return '"';
  if ((t & JsonSchema::kArray) && n.min_items == 0) return '[';
  if ((t & JsonSchema::kObject) && !any_required) return '{';
  if (t & JsonSchema::kBoolean) return 't';
  if (t & JsonSchema::kNull) return 'n';
  if (t & JsonSchema::kString) return '"';
  if (t & JsonSchema::kArray) return '[';
  if (t & JsonSchema::kObject) return '{';
  return -2;
}

// The next byte of closing_bytes(): -1 when the value is complete, -2 when no rule applies.
int JsonMatcher::closing_byte() const {
  if (complete()) return -1;
  const Frame& f = stack_[static_cast<size_t>(depth_ - 1)];
  // Inside a string's escape or UTF-8 character: a byte that finishes it.
  const auto inside_escape_or_character = [&f]() -> int {
    switch (f.aux) {
      case kEscape:
        return 'n';
      case kUnicode:
        return '0';
      case kUtf8:
        return f.phase == 1 ? 0xA0 : f.phase == 3 ? 0x90 : 0x80;
      default:
        return -2;
    }
  };
  // A finished number or literal ends at its parent's next byte.
  const auto parent_byte = [&]() {
    JsonMatcher p(schema_);
    p.assign_state(*this);
    --p.depth_;
    p.child_done();
    return p.closing_byte();
  };
  switch (f.kind) {
    case kRoot:
      return f.phase == 1 ? -1 : -2;
    case kValue:
      return value_start_byte(f.node);
    case kString:
      if (f.aux == kPlain) {
        const JsonSchema::Node& sn = schema_->node(f.node);
        return sn.length_bounded() && f.count < sn.min_length ? 'a' : '"';
      }
      return inside_escape_or_character();
    case kKey: {
      // Finish a declared key still matching (a required one first, then the shortest), else end
      // an additional property's key.
      const JsonSchema::Node& n = schema_->node(stack_[static_cast<size_t>(depth_ - 2)].node);
      int best = -1;
      for (size_t i = 0; i < n.properties.size(); ++i) {
        if (!(f.mask >> i & 1)) continue;
        const auto& p = n.properties[i];
        if (best < 0) {
          best = static_cast<int>(i);
          continue;
        }
        const auto& b = n.properties[static_cast<size_t>(best)];
        if ((p.required && !b.required) ||
            (p.required == b.required && p.key.size() < b.key.size())) {
          best = static_cast<int>(i);
        }
      }
      if (best >= 0) {
        const std::string& k = n.properties[static_cast<size_t>(best)].key;
        return static_cast<size_t>(f.count) < k.size() ? static_cast<uint8_t>(k[f.count]) : '"';
      }
      if (f.aux != kPlain) return inside_escape_or_character();
      int32_t property = -1;
      return key_complete(f, &property) ? '"' : 'x';
    }
    case kNumber:
      return number_complete(f) ? parent_byte() : '0';
    case kLiteral: {
      if (literal_complete(f)) return parent_byte();
      int best = -1;
      for (int i = 0; i < literal_count(f); ++i) {
        if (!(f.mask >> i & 1) || static_cast<int32_t>(literal_text(f, i).size()) <= f.count) continue;
        if (best < 0 || literal_text(f, i).size() < literal_text(f, best).size()) best = i;
      }
      return best < 0 ? -2 : static_cast<uint8_t>(literal_text(f, best)[f.count]);
    }
    case kObject: {
      const bool missing = !object_may_close(f);
      switch (f.phase) {
        case kOpen:
          return missing ? '"' : '}';
        case kColon:
          return ':';
        case kAfter:
          return missing ? ',' : '}';
        case kComma:
          return '"';
        default:
          return -2;
      }
    }
    case kArray: {
      const JsonSchema::Node& n = schema_->node(f.node);
      switch (f.phase) {
        case kOpen:
          return n.min_items == 0 ? ']' : value_start_byte(n.items);
        case kAfter:
          return f.count >= n.min_items ? ']' : ',';
        case kComma:
          return value_start_byte(n.items);
        default:
          return -2;
      }
    }
  }
  return -2;
}

std::optional<std::string> JsonMatcher::closing_bytes(size_t max_bytes) const {
  JsonMatcher m(schema_);
  m.assign_state(*this);
  std::string out;
  for (;;) {
    const int b = m.closing_byte();
    if (b == -1) return out;
    if (b < 0 || out.size() >= max_bytes || !m.advance(static_cast<uint8_t>(b))) return std::nullopt;
    out.push_back(static_cast<char>(b));
  }
}

}  // namespace tessera::engine
