#include "tessera/engine/json_schema_compiler.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>

namespace tessera::engine::json_schema_compile {

Status bad(const std::string& where, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, fmt::format("response_format schema{}: {}", where, what));
}
Status unsupported(const std::string& where, const std::string& what) {
  return Status(ErrorCode::kUnsupported, fmt::format("response_format schema{}: {}", where, what));
}

const std::set<std::string_view>& annotations() {
  static const std::set<std::string_view> k = {
      "title", "description", "default", "examples", "$schema", "$id", "format", "strict",
      "$comment", "$defs", "definitions", "deprecated", "readOnly", "writeOnly",
      "contentMediaType", "contentEncoding", "contentSchema", "discriminator", "nullable",
      "$anchor", "$vocabulary"};
  return k;
}
const std::set<std::string_view>& enforced() {
  static const std::set<std::string_view> k = {
      "type", "properties", "required", "additionalProperties", "patternProperties", "minProperties",
      "maxProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
      "uniqueItems", "minLength", "maxLength", "pattern", "enum", "const", "minimum", "maximum",
      "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "$ref", "allOf", "anyOf", "oneOf"};
  return k;
}

Result<uint8_t> type_bit(const json& name, const std::string& where) {
  if (!name.is_string()) return bad(where, "'type' must be a string or a list of strings");
  const auto& s = name.get_ref<const std::string&>();
  if (s == "null") return uint8_t{JsonSchema::kNull};
  if (s == "boolean") return uint8_t{JsonSchema::kBoolean};
  if (s == "integer") return uint8_t{JsonSchema::kInteger};
  if (s == "number") return uint8_t{JsonSchema::kNumber | JsonSchema::kInteger};
  if (s == "string") return uint8_t{JsonSchema::kString};
  if (s == "array") return uint8_t{JsonSchema::kArray};
  if (s == "object") return uint8_t{JsonSchema::kObject};
  return bad(where, fmt::format("unknown type '{}'", s));
}

Result<uint8_t> types_of(const json& t, const std::string& where) {
  if (!t.is_array()) return type_bit(t, where);
  if (t.empty()) return bad(where, "'type' is an empty list");
  uint8_t bits = 0;
  for (const auto& one : t) {
    TS_ASSIGN_OR_RETURN(uint8_t b, type_bit(one, where));
    bits |= b;
  }
  return bits;
}

json type_json(uint8_t bits) {
  json out = json::array();
  if (bits & JsonSchema::kNull) out.push_back("null");
  if (bits & JsonSchema::kBoolean) out.push_back("boolean");
  if (bits & JsonSchema::kNumber) out.push_back("number");
  else if (bits & JsonSchema::kInteger) out.push_back("integer");
  if (bits & JsonSchema::kString) out.push_back("string");
  if (bits & JsonSchema::kArray) out.push_back("array");
  if (bits & JsonSchema::kObject) out.push_back("object");
  return out;
}

// The key as the matcher sees it between quotes: JSON-escaped.
std::string escaped_key(const std::string& key) {
  const std::string d = json(key).dump();
  return d.substr(1, d.size() - 2);
}

// A whole number where one is expected: 3 or 3.0.
bool whole(const json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    *out = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return false;
    *out = std::fabs(d) >= 9.2e18 ? (d < 0 ? std::numeric_limits<int64_t>::min()
                                           : std::numeric_limits<int64_t>::max())
                                  : static_cast<int64_t>(d);
    return true;
  }
  return false;
}

Fixed pow10(int n) {
  Fixed p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// floor or ceil of v * 10^digits, exactly, for a finite double with |v| < 2^63.
Fixed scaled(double v, int digits, bool ceil) {
  int exp = 0;
  const double m = std::frexp(v, &exp);            // v = m * 2^exp, 0.5 <= |m| < 1
  const auto mant = static_cast<int64_t>(std::ldexp(m, 53));  // v = mant * 2^(exp - 53)
  const int e = exp - 53;
  const Fixed num = static_cast<Fixed>(mant) * pow10(digits);
  if (e >= 0) return num << e;
  if (-e >= 120) return num > 0 ? (ceil ? 1 : 0) : num < 0 ? (ceil ? 0 : -1) : 0;
  const Fixed den = static_cast<Fixed>(1) << (-e);
  Fixed q = num / den;  // truncates toward zero
  const Fixed r = num % den;
  if (r != 0) {
    if (ceil && num > 0) q += 1;
    if (!ceil && num < 0) q -= 1;
  }
  return q;
}

// One bound of a number as the node's fixed point, moved inward: ceil for a lower bound, floor
// for an upper one. An exclusive bound on a non-integer first moves to the next double, so the
// decimal text's double is strictly beyond it too.
Fixed bound(const json& v, bool lower, bool exclusive, bool integer_only) {
  const int digits = integer_only ? 0 : JsonSchema::kFractionDigits;
  const Fixed limit = static_cast<Fixed>(kMaxMagnitude) * pow10(digits) + (pow10(digits) - 1);
  Fixed out = 0;
  int64_t w = 0;
  if (whole(v, &w) && std::fabs(v.get<double>()) < 9.2e18) {
    out = static_cast<Fixed>(w) * pow10(digits);
    if (exclusive) out += lower ? 1 : -1;
  } else {
    double d = v.get<double>();
    if (std::fabs(d) >= 1e19) return d > 0 ? (lower ? limit + 1 : limit) : (lower ? -limit : -limit - 1);
    if (exclusive) {
      d = std::nextafter(d, lower ? std::numeric_limits<double>::infinity()
                                  : -std::numeric_limits<double>::infinity());
    }
    out = scaled(d, digits, lower);
  }
  return std::clamp(out, -limit - 1, limit + 1);
}

// Code points of a UTF-8 string.
int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::bitset<256> first_bytes_of_types(uint8_t t) {
  std::bitset<256> b;
  if (t & JsonSchema::kNull) b.set('n');
  if (t & JsonSchema::kBoolean) b.set('t').set('f');
  if (t & (JsonSchema::kInteger | JsonSchema::kNumber)) {
    b.set('-');
    for (int c = '0'; c <= '9'; ++c) b.set(static_cast<size_t>(c));
  }
  if (t & JsonSchema::kString) b.set('"');
  if (t & JsonSchema::kArray) b.set('[');
  if (t & JsonSchema::kObject) b.set('{');
  return b;
}

std::string describe_byte(size_t c) {
  switch (c) {
    case '{': return "objects";
    case '[': return "arrays";
    case '"': return "strings";
    case 'n': return "null";
    case 't': case 'f': return "booleans";
    default: return "numbers";
  }
}

std::string_view format_pattern(std::string_view format) {
  // Valid by construction where validators check formats: years 1000-9999 (Python's date has no
  // year 0), days 01-28 (valid in every month),
  // RFC 3339 times with an offset, lowercase hex UUIDs, a plain address, dotted-quad IPv4.
  static constexpr std::string_view kDate = "^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$";
  static constexpr std::string_view kTime =
      "^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";
  static constexpr std::string_view kDateTime =
      "^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
      "(\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$";
  static constexpr std::string_view kUuid =
      "^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";
  static constexpr std::string_view kEmail = "^[a-z0-9._+-]{1,32}@[a-z0-9-]{1,32}\\.[a-z]{2,8}$";
  static constexpr std::string_view kIpv4 =
      "^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$";
  if (format == "date") return kDate;
  if (format == "time") return kTime;
  if (format == "date-time") return kDateTime;
  if (format == "uuid") return kUuid;
  if (format == "email") return kEmail;
  if (format == "ipv4") return kIpv4;
  return {};
}

Result<int32_t> JsonSchemaCompiler::reserve(const std::string& where) {
  if (out_->nodes_.size() >= kMaxNodes) return bad(where, "more than 4096 subschemas");
  out_->nodes_.push_back(JsonSchema::Node{});
  return static_cast<int32_t>(out_->nodes_.size() - 1);
}

Result<int32_t> JsonSchemaCompiler::add(const json& s, const std::string& where, int depth) {
  if (depth > kMaxDepth) return bad(where, "nested deeper than 32 levels");
  if (s.is_boolean()) return s.get<bool>() ? kAnyNode : kNeverNode;
  if (!s.is_object()) return bad(where, "a schema must be an object or a boolean");
  // A $ref alone (annotations aside) is a node shared by every place that names it: recursive
  // schemas become cycles in the graph.
  bool ref_only = s.contains("$ref");
  for (const auto& [k, _] : s.items()) {
    if (k != "$ref" && annotations().count(k) == 0) ref_only = false;
  }
  if (ref_only) {
    std::vector<std::string> chain;
    const json* at = &s;
    for (int hop = 0; at->is_object() && at->contains("$ref"); ++hop) {
      bool only = true;
      for (const auto& [k, _] : at->items()) {
        if (k != "$ref" && annotations().count(k) == 0) only = false;
      }
      if (!only) break;
      if (hop >= kMaxRefHops) return bad(where, "more than 32 chained $refs (a cycle?)");
      const std::string r = (*at)["$ref"].is_string() ? (*at)["$ref"].get<std::string>() : "";
      if (auto m = refs_.find(r); m != refs_.end()) {
        for (const auto& c : chain) refs_[c] = m->second;
        return m->second;
      }
      chain.push_back(r);
      TS_ASSIGN_OR_RETURN(at, resolve((*at)["$ref"], where));
    }
    if (at->is_boolean()) {
      const int32_t i = at->get<bool>() ? kAnyNode : kNeverNode;
      for (const auto& c : chain) refs_[c] = i;
      return i;
    }
    TS_ASSIGN_OR_RETURN(int32_t index, reserve(where));
    for (const auto& c : chain) refs_[c] = index;
    TS_RETURN_IF_ERROR(add_into(index, *at, where + ".$ref", depth + 1));
    return index;
  }
  TS_ASSIGN_OR_RETURN(int32_t index, reserve(where));
  TS_RETURN_IF_ERROR(add_into(index, s, where, depth));
  return index;
}

Status JsonSchemaCompiler::add_into(int32_t index, const json& s, const std::string& where,
                                    int depth) {
  if (depth > kMaxDepth) return bad(where, "nested deeper than 32 levels");
  filling_.insert(index);
  Status st;
  if (s.is_boolean()) {
    node(index) = out_->nodes_[static_cast<size_t>(s.get<bool>() ? kAnyNode : kNeverNode)];
  } else if (!s.is_object()) {
    st = bad(where, "a schema must be an object or a boolean");
  } else if (s.contains("$ref") || s.contains("allOf")) {
    auto flat = flatten(s, where, depth);
    if (!flat.is_ok()) {
      st = flat.status();
    } else if (flat->is_boolean()) {
      node(index).types = 0;
    } else {
      st = add_into(index, *flat, where, depth + 1);
    }
  } else if (s.contains("anyOf") || s.contains("oneOf")) {
    alternating_.insert(index);
    st = alternatives(index, s, where, depth);
    alternating_.erase(index);
  } else {
    st = fill(index, s, where, depth);
  }
  filling_.erase(index);
  return st;
}

// Does an enum/const value satisfy the node's other keywords? (The output is the value's text,
// so a value they exclude is dropped.)
Result<bool> JsonSchemaCompiler::literal_fits(const JsonSchema::Node& n, const json& v,
                                              const json& s, const std::string& where) const {
  const uint8_t t = n.types;
  int64_t w = 0;
  if (v.is_null()) return (t & JsonSchema::kNull) != 0;
  if (v.is_boolean()) return (t & JsonSchema::kBoolean) != 0;
  if (v.is_string()) {
    if (!(t & JsonSchema::kString)) return false;
    const std::string& text = v.get_ref<const std::string&>();
    const int64_t cp = code_points(text);
    if (n.pattern) {
      uint16_t st = n.pattern->start();
      for (char ch : text) st = n.pattern->next(st, static_cast<uint8_t>(ch));
      if (!n.pattern->accepting(st)) return false;
    }
    return cp >= n.min_length && (n.max_length < 0 || cp <= n.max_length);
  }
  if (v.is_number()) {
    const bool is_whole = whole(v, &w);
    if (!(t & JsonSchema::kNumber) && !((t & JsonSchema::kInteger) && is_whole)) return false;
    if (n.bounded) {
      const int digits = n.integer_only() ? 0 : JsonSchema::kFractionDigits;
      // Conservative: the value's floor must clear lo and its ceiling hi.
      const double d = v.get<double>();
      if (std::fabs(d) >= 1e18) return false;
      const Fixed lo_v = is_whole ? static_cast<Fixed>(w) * pow10(digits) : scaled(d, digits, false);
      const Fixed hi_v = is_whole ? static_cast<Fixed>(w) * pow10(digits) : scaled(d, digits, true);
      if (lo_v < n.lo || hi_v > n.hi) return false;
      if (n.multiple_of > 0 && (!is_whole || w % n.multiple_of != 0)) return false;
    }
    return true;
  }
  const bool structured_rules = s.contains("properties") || s.contains("items") ||
                                s.contains("prefixItems") || s.contains("additionalProperties") ||
                                s.contains("patternProperties") || s.contains("required");
  if (structured_rules) {
    return unsupported(where, "enum/const object or array values beside properties/items/"
                              "required/additionalProperties/patternProperties");
  }
  if (v.is_array()) {
    if (!(t & JsonSchema::kArray)) return false;
    const auto size = static_cast<int64_t>(v.size());
    return size >= n.min_items && (n.max_items < 0 || size <= n.max_items);
  }
  if (!(t & JsonSchema::kObject)) return false;
  const auto size = static_cast<int64_t>(v.size());
  return size >= n.min_properties && (n.max_properties < 0 || size <= n.max_properties);
}

Status JsonSchemaCompiler::fill(int32_t index, const json& s, const std::string& where, int depth) {
  for (const auto& [k, v] : s.items()) {
    if (annotations().count(k) != 0 || enforced().count(k) != 0) continue;
    return unsupported(where, fmt::format("keyword '{}' is not supported (supported: {})", k,
                                          kEnforcedList));
  }
  JsonSchema::Node n;
  TS_RETURN_IF_ERROR(own_keywords(n, s, where));
  // The node's own fields are in place before its children compile: a $ref cycle back to it
  // (recursion) reads its types and literals.
  node(index) = n;
  TS_RETURN_IF_ERROR(object_children(n, s, where, depth));
  TS_RETURN_IF_ERROR(array_children(n, s, where, depth));
  node(index) = std::move(n);
  return Status();
}

// `pattern`, or a `format` this writes as one (not both at once); with minLength/maxLength, the
// table of lengths each automaton state can still reach (PatternLengths).
Status JsonSchemaCompiler::string_pattern(JsonSchema::Node& n, const json& s,
                                          const std::string& where) const {
  std::string pattern;
  if (auto p = s.find("pattern"); p != s.end()) {
    if (!p->is_string()) return bad(where, "'pattern' must be a string");
    pattern = p->get<std::string>();
  }
  if (auto f = s.find("format"); f != s.end() && f->is_string()) {
    const std::string_view as = format_pattern(f->get_ref<const std::string&>());
    if (!as.empty()) {
      if (!pattern.empty()) return unsupported(where, "'pattern' together with 'format' " + f->get<std::string>());
      pattern = as;
    }
  }
  if (pattern.empty() && !s.contains("pattern")) return Status();
  auto dfa = RegexDfa::compile(pattern);
  if (!dfa.is_ok()) {
    return Status(dfa.status().code(),
                  fmt::format("response_format schema{}: {}", where, dfa.status().message()));
  }
  n.pattern = std::move(dfa).value();
  if (n.length_bounded()) {
    auto lengths = PatternLengths::build(n.pattern, n.min_length, n.max_length);
    if (!lengths.is_ok()) {
      return Status(lengths.status().code(),
                    fmt::format("response_format schema{}: {}", where, lengths.status().message()));
    }
    n.pattern_lengths = std::move(lengths).value();
    // No string of an allowed length matches: the node takes no string.
    if (!n.pattern_lengths->feasible(n.pattern->start(), 0, 0)) {
      n.types = static_cast<uint8_t>(n.types & ~JsonSchema::kString);
    }
  }
  return Status();
}

// Types (stated, or implied by the other keywords), counts and lengths, numbers, enum/const.
Status JsonSchemaCompiler::own_keywords(JsonSchema::Node& n, const json& s,
                                        const std::string& where) const {
  if (auto t = s.find("type"); t != s.end()) {
    TS_ASSIGN_OR_RETURN(n.types, types_of(*t, where));
  } else if (s.contains("properties") || s.contains("additionalProperties") ||
             s.contains("patternProperties") || s.contains("required") ||
             s.contains("minProperties") || s.contains("maxProperties")) {
    n.types = JsonSchema::kObject;
  } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") ||
             s.contains("maxItems")) {
    n.types = JsonSchema::kArray;
  } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern")) {
    n.types = JsonSchema::kString;
  } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
             s.contains("exclusiveMaximum") || s.contains("multipleOf")) {
    n.types = JsonSchema::kNumber | JsonSchema::kInteger;
  }
  auto count = [&](const char* key, int64_t& out) -> Status {
    auto v = s.find(key);
    if (v == s.end()) return Status();
    int64_t w = 0;
    if (!whole(*v, &w) || w < 0) return bad(where, fmt::format("'{}' must be a non-negative integer", key));
    out = w;
    return Status();
  };
  TS_RETURN_IF_ERROR(count("minItems", n.min_items));
  TS_RETURN_IF_ERROR(count("maxItems", n.max_items));
  if (n.max_items >= 0 && n.max_items < n.min_items) return bad(where, "maxItems < minItems");
  TS_RETURN_IF_ERROR(count("minLength", n.min_length));
  TS_RETURN_IF_ERROR(count("maxLength", n.max_length));
  if (n.max_length >= 0 && n.max_length < n.min_length) return bad(where, "maxLength < minLength");
  if (n.min_length > JsonSchema::kMaxStringLength || n.max_length > JsonSchema::kMaxStringLength) {
    return bad(where, "minLength/maxLength above 1000000");
  }
  TS_RETURN_IF_ERROR(count("minProperties", n.min_properties));
  TS_RETURN_IF_ERROR(count("maxProperties", n.max_properties));
  if (n.max_properties >= 0 && n.max_properties < n.min_properties) {
    return bad(where, "maxProperties < minProperties");
  }
  if (auto u = s.find("uniqueItems"); u != s.end() && !u->is_boolean()) {
    return bad(where, "'uniqueItems' must be a boolean");  // true: array_children
  }
  TS_RETURN_IF_ERROR(number_keywords(n, s, where));
  TS_RETURN_IF_ERROR(string_pattern(n, s, where));
  return literal_keywords(n, s, where);
}

// multipleOf (whole, on integers: a number node then writes integers) and the bounds.
Status JsonSchemaCompiler::number_keywords(JsonSchema::Node& n, const json& s,
                                           const std::string& where) const {
  if (auto m = s.find("multipleOf"); m != s.end()) {
    int64_t w = 0;
    if (!m->is_number() || m->get<double>() <= 0) return bad(where, "'multipleOf' must be a positive number");
    if (!whole(*m, &w) || w > kMaxSafeInteger) {
      return unsupported(where, "keyword 'multipleOf' with a fractional or huge value is not "
                                "supported (whole numbers up to 2^53 are)");
    }
    n.multiple_of = w;
    if (n.types & JsonSchema::kNumber) n.types = static_cast<uint8_t>(n.types & ~JsonSchema::kNumber);
  }
  const bool has_bounds = s.contains("minimum") || s.contains("maximum") ||
                          s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum");
  if (has_bounds || n.multiple_of > 0) {
    const bool int_only = n.integer_only();
    const int digits = int_only ? 0 : JsonSchema::kFractionDigits;
    const Fixed limit = static_cast<Fixed>(n.multiple_of > 0 ? kMaxSafeInteger : kMaxMagnitude) *
                            pow10(digits) + (int_only ? 0 : pow10(digits) - 1);
    n.bounded = true;
    n.lo = -limit;
    n.hi = limit;
    auto apply = [&](const char* key, bool lower, bool exclusive_kw) -> Status {
      auto v = s.find(key);
      if (v == s.end()) return Status();
      if (v->is_boolean()) {
        if (!exclusive_kw) return bad(where, fmt::format("'{}' must be a number", key));
        return Status();  // draft 4's boolean form: read with minimum/maximum below
      }
      if (!v->is_number() || !std::isfinite(v->get<double>())) {
        return bad(where, fmt::format("'{}' must be a number", key));
      }
      bool exclusive = exclusive_kw;
      if (!exclusive_kw) {  // draft 4: "exclusiveMinimum": true beside "minimum"
        auto e = s.find(lower ? "exclusiveMinimum" : "exclusiveMaximum");
        exclusive = e != s.end() && e->is_boolean() && e->get<bool>();
      }
      const Fixed b = bound(*v, lower, exclusive, int_only);
      if (lower) n.lo = std::max(n.lo, b);
      else n.hi = std::min(n.hi, b);
      return Status();
    };
    TS_RETURN_IF_ERROR(apply("minimum", true, false));
    TS_RETURN_IF_ERROR(apply("maximum", false, false));
    TS_RETURN_IF_ERROR(apply("exclusiveMinimum", true, true));
    TS_RETURN_IF_ERROR(apply("exclusiveMaximum", false, true));
    if ((n.types & (JsonSchema::kInteger | JsonSchema::kNumber)) && n.lo > n.hi) {
      n.types = static_cast<uint8_t>(n.types & ~(JsonSchema::kInteger | JsonSchema::kNumber));
    }
  }
  return Status();
}

// enum/const: the values the node's other keywords allow.
Status JsonSchemaCompiler::literal_keywords(JsonSchema::Node& n, const json& s,
                                            const std::string& where) const {
  std::vector<const json*> values;
  if (auto e = s.find("enum"); e != s.end()) {
    if (!e->is_array() || e->empty()) return bad(where, "'enum' must be a non-empty list");
    if (e->size() > static_cast<size_t>(JsonSchema::kMaxLiterals)) return bad(where, "'enum' has more than 64 values");
    for (const auto& v : *e) values.push_back(&v);
  }
  if (auto c = s.find("const"); c != s.end()) {
    if (!values.empty()) {
      const bool listed = std::any_of(values.begin(), values.end(), [&](const json* v) { return *v == *c; });
      values.clear();
      if (listed) values.push_back(&*c);
    } else {
      values.push_back(&*c);
    }
    if (values.empty()) n.types = 0;  // const not in enum: nothing
  }
  if (!values.empty() || s.contains("const")) {
    std::set<std::string> seen;
    for (const json* v : values) {
      TS_ASSIGN_OR_RETURN(bool fits, literal_fits(n, *v, s, where));
      std::string text = v->dump();
      if (fits && seen.insert(text).second) n.literals.push_back(std::move(text));
    }
    if (n.literals.empty()) n.types = 0;
  }
  return Status();
}

// additionalProperties, properties, required (after additionalProperties: a required name that
// properties lacks takes its schema).
Status JsonSchemaCompiler::object_children(JsonSchema::Node& n, const json& s,
                                           const std::string& where, int depth) {
  if (auto a = s.find("additionalProperties"); a != s.end()) {
    if (a->is_boolean() && !a->get<bool>()) {
      n.additional = -1;
    } else {
      TS_ASSIGN_OR_RETURN(n.additional, add(*a, where + ".additionalProperties", depth + 1));
    }
  }
  std::vector<json> pattern_schemas;
  TS_RETURN_IF_ERROR(pattern_properties(n, s, where, depth, &pattern_schemas));
  if (auto p = s.find("properties"); p != s.end()) {
    if (!p->is_object()) return bad(where, "'properties' must be an object");
    if (p->size() > static_cast<size_t>(JsonSchema::kMaxProperties)) return bad(where, "more than 64 properties");
    for (const auto& [k, v] : p->items()) {
      // A pattern that matches the name adds its schema to the property's (an allOf).
      const uint32_t set = matching_patterns(n, k);
      json value = v;
      if (set != 0) {
        json parts = json::array({v});
        for (size_t i = 0; i < pattern_schemas.size(); ++i) {
          if (set >> i & 1) parts.push_back(pattern_schemas[i]);
        }
        value = json{{"allOf", std::move(parts)}};
      }
      TS_ASSIGN_OR_RETURN(int32_t child, add(value, where + "." + k, depth + 1));
      JsonSchema::Property prop{escaped_key(k), child, false, false};
      prop.forbidden = child == kNeverNode;
      n.properties.push_back(std::move(prop));
    }
  }
  if (auto r = s.find("required"); r != s.end()) {
    if (!r->is_array()) return bad(where, "'required' must be a list");
    for (const auto& name : *r) {
      if (!name.is_string()) return bad(where, "'required' must list strings");
      const std::string key = escaped_key(name.get<std::string>());
      auto it = std::find_if(n.properties.begin(), n.properties.end(),
                             [&](const JsonSchema::Property& p) { return p.key == key; });
      if (it == n.properties.end()) {
        // Not in properties: its value takes the schema of the patterns matching it, else
        // additionalProperties'.
        if (const uint32_t set = matching_patterns(n, name.get<std::string>()); set != 0) {
          if (n.properties.size() >= static_cast<size_t>(JsonSchema::kMaxProperties)) {
            return bad(where, "more than 64 properties");
          }
          n.properties.push_back({key, n.pattern_nodes[set - 1], true, false});
          continue;
        }
        if (n.additional < 0) {
          return bad(where, fmt::format("required property '{}' is not in 'properties' and "
                                        "additionalProperties is false: no object satisfies it",
                                        name.get<std::string>()));
        }
        if (n.properties.size() >= static_cast<size_t>(JsonSchema::kMaxProperties)) {
          return bad(where, "more than 64 properties");
        }
        n.properties.push_back({key, n.additional, true, false});
        continue;
      }
      if (it->forbidden) {
        return bad(where, fmt::format("required property '{}' has the schema false: no object "
                                      "satisfies it", name.get<std::string>()));
      }
      it->required = true;
    }
  }
  return Status();
}

// patternProperties: each pattern's automaton, and a node per non-empty set of patterns (the
// allOf of their schemas) for the keys that set matches. The schemas go to `schemas`.
Status JsonSchemaCompiler::pattern_properties(JsonSchema::Node& n, const json& s,
                                              const std::string& where, int depth,
                                              std::vector<json>* schemas) {
  auto pp = s.find("patternProperties");
  if (pp == s.end()) return Status();
  if (!pp->is_object()) return bad(where, "'patternProperties' must be an object");
  if (pp->size() > static_cast<size_t>(JsonSchema::kMaxPatternProperties)) {
    return unsupported(where, fmt::format("more than {} patternProperties",
                                          JsonSchema::kMaxPatternProperties));
  }
  for (auto it = pp->begin(); it != pp->end(); ++it) {
    auto dfa = RegexDfa::compile(it.key());
    if (!dfa.is_ok()) {
      return Status(dfa.status().code(), fmt::format("response_format schema{}.patternProperties: {}",
                                                     where, dfa.status().message()));
    }
    n.pattern_keys.push_back(std::move(dfa).value());
    schemas->push_back(it.value());
  }
  const uint32_t sets = 1u << schemas->size();
  for (uint32_t set = 1; set < sets; ++set) {
    json parts = json::array();
    for (size_t i = 0; i < schemas->size(); ++i) {
      if (set >> i & 1) parts.push_back((*schemas)[i]);
    }
    const json merged = parts.size() == 1 ? parts[0] : json{{"allOf", std::move(parts)}};
    TS_ASSIGN_OR_RETURN(int32_t child, add(merged, fmt::format("{}.patternProperties#{}", where, set),
                                           depth + 1));
    n.pattern_nodes.push_back(child);
  }
  return Status();
}

// The set of n's patternProperties (bit i: pattern_keys[i]) that match `name` (decoded).
uint32_t JsonSchemaCompiler::matching_patterns(const JsonSchema::Node& n, const std::string& name) {
  uint32_t set = 0;
  for (size_t i = 0; i < n.pattern_keys.size(); ++i) {
    const RegexDfa& dfa = *n.pattern_keys[i];
    uint16_t st = dfa.start();
    for (char ch : name) st = dfa.next(st, static_cast<uint8_t>(ch));
    if (dfa.accepting(st)) set |= 1u << i;
  }
  return set;
}

// uniqueItems: true. Enforced where the items are a finite set of values the matcher can tell
// apart by their text (enum/const, or booleans and null), each then written at most once; with
// at most one item it says nothing.
Status JsonSchemaCompiler::unique_items(JsonSchema::Node& n, const json& s, const std::string& where,
                                        int depth) {
  auto u = s.find("uniqueItems");
  if (u == s.end() || !u->get<bool>() || (n.max_items >= 0 && n.max_items <= 1)) return Status();
  const auto refuse = [&] {
    return unsupported(where, "keyword 'uniqueItems' (true) is supported where the items are "
                              "enum/const values or booleans/null, without prefixItems");
  };
  if (!n.prefix_items.empty()) return refuse();
  const JsonSchema::Node& item = node(n.items);
  if (!item.alternatives.empty() || filling_.count(n.items) != 0) return refuse();
  if (item.literals.empty()) {
    if (item.types == 0 || (item.types & ~(JsonSchema::kBoolean | JsonSchema::kNull)) != 0) return refuse();
    json values = json::array();
    if (item.types & JsonSchema::kBoolean) values.insert(values.end(), {true, false});
    if (item.types & JsonSchema::kNull) values.push_back(nullptr);
    TS_ASSIGN_OR_RETURN(n.items, add(json{{"enum", std::move(values)}}, where + "[]", depth + 1));
  }
  const std::vector<std::string>& texts = node(n.items).literals;
  // Two texts of one value (1 and 1.0) would let a duplicate through.
  std::vector<json> values;
  for (const std::string& t : texts) values.push_back(json::parse(t));
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = i + 1; j < values.size(); ++j) {
      if (values[i] == values[j]) {
        return unsupported(where, fmt::format("uniqueItems over enum values {} and {}, which are "
                                              "equal", texts[i], texts[j]));
      }
    }
  }
  n.unique_items = true;
  const auto cap = static_cast<int64_t>(texts.size());
  n.max_items = n.max_items < 0 ? cap : std::min(n.max_items, cap);
  if (n.min_items > n.max_items) n.types = static_cast<uint8_t>(n.types & ~JsonSchema::kArray);
  return Status();
}

// prefixItems (or draft 7's items list) and items (or additionalItems); items: false caps them.
Status JsonSchemaCompiler::array_children(JsonSchema::Node& n, const json& s,
                                          const std::string& where, int depth) {
  const json* items = nullptr;
  const json* prefix = nullptr;
  if (auto it = s.find("items"); it != s.end()) {
    if (it->is_array()) prefix = &*it;  // draft 7: a list of item schemas
    else items = &*it;
  }
  if (auto pi = s.find("prefixItems"); pi != s.end()) {
    if (prefix != nullptr) return bad(where, "both 'prefixItems' and an 'items' list");
    if (!pi->is_array()) return bad(where, "'prefixItems' must be a list");
    prefix = &*pi;
  }
  if (auto ai = s.find("additionalItems"); ai != s.end() && items == nullptr) {
    if (prefix != nullptr && prefix == &s["items"]) items = &*ai;  // draft 7 only
  }
  if (prefix != nullptr) {
    if (prefix->size() > static_cast<size_t>(JsonSchema::kMaxProperties)) {
      return bad(where, "more than 64 prefixItems");
    }
    for (size_t i = 0; i < prefix->size(); ++i) {
      TS_ASSIGN_OR_RETURN(int32_t child, add((*prefix)[i], fmt::format("{}[{}]", where, i), depth + 1));
      n.prefix_items.push_back(child);
    }
  }
  if (items != nullptr) {
    TS_ASSIGN_OR_RETURN(n.items, add(*items, where + "[]", depth + 1));
  }
  TS_RETURN_IF_ERROR(unique_items(n, s, where, depth));
  if (n.items == kNeverNode) {
    const auto cap = static_cast<int64_t>(n.prefix_items.size());
    n.max_items = n.max_items < 0 ? cap : std::min(n.max_items, cap);
    if (n.min_items > n.max_items) n.types = static_cast<uint8_t>(n.types & ~JsonSchema::kArray);
  }
  return Status();
}

// Fewest stack frames each node's smallest value needs (a fixpoint: recursion through $ref
// resolves to the shortest way out, kUnreachable where there is none).
Status JsonSchemaCompiler::finish() {
  out_->finish();
  const JsonSchema::Node& r = out_->node(out_->root());
  if (r.min_depth >= JsonSchema::kUnreachable) {
    return bad("", "no JSON value satisfies this schema");
  }
  return check_pattern_overlaps();
}

namespace {
// Some string every automaton of `dfas` accepts (a search of their product, at most kMaxStates
// product states): nullopt when that bound is hit before an answer.
std::optional<bool> intersect(const std::vector<const RegexDfa*>& dfas) {
  constexpr size_t kMaxStates = 1 << 16;
  std::set<std::vector<uint16_t>> seen;
  std::vector<std::vector<uint16_t>> todo;
  todo.emplace_back(dfas.size(), uint16_t{0});
  seen.insert(todo.back());
  while (!todo.empty()) {
    const std::vector<uint16_t> at = std::move(todo.back());
    todo.pop_back();
    bool all = true;
    for (size_t i = 0; i < dfas.size(); ++i) all = all && dfas[i]->accepting(at[i]);
    if (all) return true;
    for (int b = 0; b < 256; ++b) {
      std::vector<uint16_t> next(dfas.size());
      bool dead = false;
      for (size_t i = 0; i < dfas.size() && !dead; ++i) {
        next[i] = dfas[i]->next(at[i], static_cast<uint8_t>(b));
        dead = next[i] == RegexDfa::kDead;
      }
      if (dead || !seen.insert(next).second) continue;
      if (seen.size() > kMaxStates) return std::nullopt;
      todo.push_back(std::move(next));
    }
  }
  return false;
}
}  // namespace

// A key that several patternProperties match takes all their schemas; where those admit no value
// together, no such key may be written, which the matcher cannot foresee byte by byte: refused
// unless the patterns never match one key together.
Status JsonSchemaCompiler::check_pattern_overlaps() const {
  for (const JsonSchema::Node& n : out_->nodes_) {
    for (uint32_t set = 1; set <= n.pattern_nodes.size(); ++set) {
      if ((set & (set - 1)) == 0) continue;  // one pattern: its own schema
      if (out_->node(n.pattern_nodes[set - 1]).min_depth < JsonSchema::kUnreachable) continue;
      std::vector<const RegexDfa*> dfas;
      for (size_t i = 0; i < n.pattern_keys.size(); ++i) {
        if (set >> i & 1) dfas.push_back(n.pattern_keys[i].get());
      }
      const std::optional<bool> both = intersect(dfas);
      if (!both || *both) {
        return unsupported("", "patternProperties whose patterns can match one key together have "
                               "schemas no value satisfies together");
      }
    }
  }
  return Status();
}

}  // namespace tessera::engine::json_schema_compile
