// JsonMatcher's closing: the byte that finishes the document soonest from the current state
// (closing_byte) and the whole shortest completion within a byte budget (closing_bytes), which
// TokenConstraint uses to end a constrained output inside max_tokens.
#include <string>

#include "tessera/engine/json_matcher.h"
#include "tessera/engine/json_matcher_states.h"

namespace tessera::engine {

// The first byte of a short value for schema node `node`: the shortest kind the node allows
// (a number's "0", an unbounded string's "", an empty array or object where nothing is required,
// then the literals), -2 when the node allows nothing.
int JsonMatcher::value_start_byte(int32_t node, int32_t at) const {
  const JsonSchema::Node& n = schema_->node(node);
  if (!n.alternatives.empty()) {
    // The alternative with the shallowest smallest value (null before a recursive object).
    int32_t best = -1;
    for (int32_t a : n.alternatives) {
      const int32_t md = schema_->node(a).min_depth;
      if (fits(at, md) && (best < 0 || md < schema_->node(best).min_depth)) best = a;
    }
    return best < 0 ? -2 : value_start_byte(best, at);
  }
  if (!n.literals.empty()) {
    const auto shortest = std::min_element(
        n.literals.begin(), n.literals.end(),
        [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
    return static_cast<uint8_t>((*shortest)[0]);
  }
  const uint8_t t = n.types;
  bool any_required = n.min_properties > 0;
  for (const auto& p : n.properties) any_required |= p.required;
  const bool object_fits = fits(at, n.min_depth_object), array_fits = fits(at, n.min_depth_array);
  if (t & (JsonSchema::kInteger | JsonSchema::kNumber)) {
    if (!n.bounded) return '0';
    for (uint8_t c : std::string_view("0123456789-")) {
      Frame g;
      g.node = node;
      if (start_number(g, n, c)) return c;
    }
  }
  if ((t & JsonSchema::kString) && n.min_length == 0) return '"';
  if ((t & JsonSchema::kArray) && n.min_items == 0 && array_fits) return '[';
  if ((t & JsonSchema::kObject) && !any_required && object_fits) return '{';
  if (t & JsonSchema::kBoolean) return 't';
  if (t & JsonSchema::kNull) return 'n';
  if (t & JsonSchema::kString) return '"';
  if ((t & JsonSchema::kArray) && array_fits) return '[';
  if ((t & JsonSchema::kObject) && object_fits) return '{';
  return -2;
}

// Toward a key that some pattern of `object` matches (and whose value fits): the automaton's
// next byte, escaped as JSON needs; -2 when no pattern can finish the key.
int JsonMatcher::key_pattern_byte(const Frame& f, const JsonSchema::Node& object) const {
  for (size_t i = 0; i < object.pattern_keys.size(); ++i) {
    const uint16_t st = pattern_state(f.pat, i);
    if (st == RegexDfa::kDead || !property_fits(object, -2 - (int32_t{1} << i), depth_ - 1)) continue;
    Frame t = f;
    t.key = st;
    const int b = pattern_closing_byte(t, *object.pattern_keys[i]);
    if (b >= 0) return b;
  }
  return -2;
}

// The first byte of the shortest literal an array with uniqueItems has not written yet.
int JsonMatcher::unique_item_start_byte(const Frame& array) const {
  const JsonSchema::Node& item = schema_->node(schema_->node(array.node).items);
  int best = -1;
  for (size_t i = 0; i < item.literals.size(); ++i) {
    if (array.mask >> i & 1) continue;
    if (best < 0 || item.literals[i].size() < item.literals[static_cast<size_t>(best)].size()) {
      best = static_cast<int>(i);
    }
  }
  return best < 0 ? -2 : static_cast<uint8_t>(item.literals[static_cast<size_t>(best)][0]);
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
    if (f.kind == kLiteral) {
      p.literal_done();
    } else {
      --p.depth_;
      p.child_done();
    }
    return p.closing_byte();
  };
  switch (f.kind) {
    case kRaw:
      return schema_->raw()->toward_accept(static_cast<uint16_t>(f.key));
    case kRoot:
      return f.phase == 1 ? -1 : -2;
    case kValue:
      return value_start_byte(f.node, depth_ - 1);
    case kString:
      if (const JsonSchema::Node& sn = schema_->node(f.node); sn.pattern_lengths) {
        return pattern_length_closing_byte(f, *sn.pattern_lengths);
      } else if (sn.pattern) {
        return pattern_closing_byte(f, *sn.pattern);
      }
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
      int32_t property = -1;
      if (f.aux == kPlain && key_complete(f, &property)) return '"';
      if (const int b = key_pattern_byte(f, n); b >= 0) return b;
      if (f.aux != kPlain) return inside_escape_or_character();
      return 'x';
    }
    case kNumber: {
      if (number_complete(f) && number_value_ok(f)) return parent_byte();
      // The first digit (or '.') that keeps a number within the bounds reachable.
      for (uint8_t c : std::string_view("0123456789.")) {
        JsonMatcher t(schema_);
        t.assign_state(*this);
        if (t.advance(c)) return c;
      }
      return -2;
    }
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
          if (n.min_items == 0) return ']';
          return n.unique_items ? unique_item_start_byte(f) : value_start_byte(n.item_node(f.count), depth_);
        case kAfter:
          return f.count >= n.min_items ? ']' : ',';
        case kComma:
          return n.unique_items ? unique_item_start_byte(f) : value_start_byte(n.item_node(f.count), depth_);
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
