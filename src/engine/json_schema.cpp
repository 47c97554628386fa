#include "tessera/engine/json_schema.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bitset>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>

namespace tessera::engine {
namespace json_schema_compile {

using nlohmann::json;
using Fixed = JsonSchema::Fixed;

constexpr int kMaxDepth = 32;  // nesting of the schema's text (recursion goes through $ref)
constexpr size_t kMaxNodes = 4096;
constexpr int kMaxRefHops = 32;
// Merge and flatten steps per schema: allOf over $refs that themselves merge can otherwise grow
// exponentially with the nesting (a hostile schema).
constexpr int64_t kMaxWork = 20000;
constexpr int32_t kAnyNode = 0;
constexpr int32_t kNeverNode = 1;
constexpr int64_t kMaxMagnitude = 999'999'999'999'999'999;  // 18 digits
constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;  // multipleOf: exact in a double

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
      "type", "properties", "required", "additionalProperties", "minProperties",
      "maxProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
      "uniqueItems", "minLength", "maxLength", "enum", "const", "minimum", "maximum",
      "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "$ref", "allOf", "anyOf", "oneOf"};
  return k;
}
constexpr const char* kEnforcedList =
    "type, enum, const, properties, required, additionalProperties, minProperties, "
    "maxProperties, items, prefixItems, additionalItems, minItems, maxItems, uniqueItems: false, "
    "minLength, maxLength, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf "
    "(whole numbers), $ref, $defs, allOf, anyOf, oneOf";

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

// Compiles one request's schema into a JsonSchema's node graph.
class JsonSchemaCompiler {
 public:
  JsonSchemaCompiler(const json& root, JsonSchema* out) : root_(root), out_(out) {}

  Result<int32_t> add(const json& s, const std::string& where, int depth);
  Status finish();

 private:
  Result<const json*> resolve(const json& ref, const std::string& where) const;
  Result<json> flatten(const json& s, const std::string& where, int depth) const;
  Result<json> merge(json a, json b, const std::string& where, int depth) const;
  Status add_into(int32_t index, const json& s, const std::string& where, int depth);
  Status fill(int32_t index, const json& s, const std::string& where, int depth);
  Status alternatives(int32_t index, const json& s, const std::string& where, int depth);
  Result<bool> literal_fits(const JsonSchema::Node& n, const json& v, const json& s,
                            const std::string& where) const;
  std::bitset<256> first_bytes(int32_t node) const;
  Result<int32_t> reserve(const std::string& where);
  JsonSchema::Node& node(int32_t i) { return out_->nodes_[static_cast<size_t>(i)]; }

  const json& root_;
  JsonSchema* out_;
  std::map<std::string, int32_t> refs_;
  std::set<int32_t> filling_;       // nodes being compiled (a $ref cycle lands on one of these)
  std::set<int32_t> alternating_;   // of those, anyOf/oneOf nodes (their alternatives unknown yet)
  mutable int64_t work_ = 0;        // flatten/merge steps so far (kMaxWork)
};

Result<int32_t> JsonSchemaCompiler::reserve(const std::string& where) {
  if (out_->nodes_.size() >= kMaxNodes) return bad(where, "more than 4096 subschemas");
  out_->nodes_.push_back(JsonSchema::Node{});
  return static_cast<int32_t>(out_->nodes_.size() - 1);
}

Result<const json*> JsonSchemaCompiler::resolve(const json& ref, const std::string& where) const {
  if (!ref.is_string()) return bad(where, "'$ref' must be a string");
  const std::string& r = ref.get_ref<const std::string&>();
  if (r.empty() || r[0] != '#') {
    return unsupported(where, fmt::format("'$ref' \"{}\": only references inside the schema "
                                          "(starting with '#') are supported", r));
  }
  if (r.size() > 1 && r[1] != '/') {
    return unsupported(where, fmt::format("'$ref' \"{}\": anchors are not supported, only JSON "
                                          "pointers (\"#/$defs/Name\")", r));
  }
  // JSON pointer (RFC 6901) after '#', percent-decoded as a URI fragment.
  std::string pointer;
  for (size_t i = 1; i < r.size(); ++i) {
    if (r[i] == '%' && i + 2 < r.size() && std::isxdigit(static_cast<unsigned char>(r[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(r[i + 2]))) {
      pointer.push_back(static_cast<char>(std::stoi(r.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      pointer.push_back(r[i]);
    }
  }
  const json* at = &root_;
  size_t pos = 0;
  while (pos < pointer.size()) {
    const size_t next = pointer.find('/', pos + 1);
    std::string token = pointer.substr(pos + 1, next == std::string::npos ? std::string::npos
                                                                          : next - pos - 1);
    std::string unescaped;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
        unescaped.push_back(token[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        unescaped.push_back(token[i]);
      }
    }
    if (at->is_object()) {
      auto it = at->find(unescaped);
      if (it == at->end()) return bad(where, fmt::format("'$ref' \"{}\" points at nothing", r));
      at = &*it;
    } else if (at->is_array()) {
      int64_t idx = -1;
      try {
        idx = std::stoll(unescaped);
      } catch (...) {
      }
      if (idx < 0 || static_cast<size_t>(idx) >= at->size()) {
        return bad(where, fmt::format("'$ref' \"{}\" points at nothing", r));
      }
      at = &(*at)[static_cast<size_t>(idx)];
    } else {
      return bad(where, fmt::format("'$ref' \"{}\" points at nothing", r));
    }
    if (next == std::string::npos) break;
    pos = next;
  }
  return at;
}

// The schema with its top-level $ref and allOf merged in (recursively), or `false`.
Result<json> JsonSchemaCompiler::flatten(const json& s, const std::string& where, int depth) const {
  if (depth > kMaxDepth) return bad(where, "nested deeper than 32 levels (through $ref or allOf)");
  if (++work_ > kMaxWork) return bad(where, "too complex: more than 20000 allOf/$ref merge steps");
  if (s.is_boolean()) return s.get<bool>() ? json::object() : json(false);
  if (!s.is_object()) return bad(where, "a schema must be an object or a boolean");
  if (!s.contains("$ref") && !s.contains("allOf")) return s;
  json base = s;
  base.erase("$ref");
  base.erase("allOf");
  std::vector<json> parts;
  if (auto r = s.find("$ref"); r != s.end()) {
    TS_ASSIGN_OR_RETURN(const json* target, resolve(*r, where));
    TS_ASSIGN_OR_RETURN(json t, flatten(*target, where + ".$ref", depth + 1));
    parts.push_back(std::move(t));
  }
  if (auto a = s.find("allOf"); a != s.end()) {
    if (!a->is_array() || a->empty()) return bad(where, "'allOf' must be a non-empty list");
    for (size_t i = 0; i < a->size(); ++i) {
      TS_ASSIGN_OR_RETURN(json t, flatten((*a)[i], fmt::format("{}.allOf[{}]", where, i), depth + 1));
      parts.push_back(std::move(t));
    }
  }
  json out = std::move(base);
  for (json& p : parts) {
    TS_ASSIGN_OR_RETURN(out, merge(std::move(out), std::move(p), where, depth));
    if (out.is_boolean()) return out;
  }
  return out;
}

// allOf of two flattened schemas as one, where that is exact; kUnsupported where it is not.
Result<json> JsonSchemaCompiler::merge(json a, json b, const std::string& where, int depth) const {
  if (++work_ > kMaxWork) return bad(where, "too complex: more than 20000 allOf/$ref merge steps");
  if (a.is_boolean() || b.is_boolean()) return json(false);
  TS_ASSIGN_OR_RETURN(a, flatten(a, where, depth + 1));
  TS_ASSIGN_OR_RETURN(b, flatten(b, where, depth + 1));
  if (a.is_boolean() || b.is_boolean()) return json(false);
  json out = json::object();
  auto both = [&](const char* k) { return a.contains(k) && b.contains(k); };
  auto cannot = [&](const std::string& k) {
    return unsupported(where, fmt::format("allOf: keyword '{}' appears in two parts with different "
                                          "values, which cannot be merged exactly", k));
  };
  std::set<std::string> keys;
  for (const auto& [k, _] : a.items()) keys.insert(k);
  for (const auto& [k, _] : b.items()) keys.insert(k);
  for (const std::string& k : keys) {
    const bool in_a = a.contains(k), in_b = b.contains(k);
    if (!in_a || !in_b) {
      out[k] = in_a ? a[k] : b[k];
      continue;
    }
    const json& x = a[k];
    const json& y = b[k];
    if (annotations().count(k) != 0 || x == y) {
      out[k] = x;
    } else if (k == "type") {
      TS_ASSIGN_OR_RETURN(uint8_t tx, types_of(x, where));
      TS_ASSIGN_OR_RETURN(uint8_t ty, types_of(y, where));
      const uint8_t t = tx & ty;
      if (t == 0) return json(false);
      out[k] = type_json(t);
    } else if (k == "enum" || k == "const") {
      // handled below with the other one
    } else if (k == "properties") {
      if (!x.is_object() || !y.is_object()) return bad(where, "'properties' must be an object");
      json p = x;
      for (const auto& [name, sub] : y.items()) {
        p[name] = p.contains(name) ? json{{"allOf", json::array({p[name], sub})}} : sub;
      }
      out[k] = std::move(p);
    } else if (k == "required") {
      if (!x.is_array() || !y.is_array()) return bad(where, "'required' must be a list");
      json r = x;
      for (const auto& name : y) {
        if (std::find(r.begin(), r.end(), name) == r.end()) r.push_back(name);
      }
      out[k] = std::move(r);
    } else if (k == "items" && x.is_object() == y.is_object() && !x.is_array() && !y.is_array()) {
      out[k] = json{{"allOf", json::array({x, y})}};
    } else if (k == "minItems" || k == "minLength" || k == "minProperties" || k == "minimum" ||
               k == "exclusiveMinimum") {
      if (!x.is_number() || !y.is_number()) return cannot(k);
      out[k] = x.get<double>() >= y.get<double>() ? x : y;
    } else if (k == "maxItems" || k == "maxLength" || k == "maxProperties" || k == "maximum" ||
               k == "exclusiveMaximum") {
      if (!x.is_number() || !y.is_number()) return cannot(k);
      out[k] = x.get<double>() <= y.get<double>() ? x : y;
    } else if (k == "multipleOf") {
      int64_t mx = 0, my = 0;
      if (!whole(x, &mx) || !whole(y, &my) || mx <= 0 || my <= 0) return cannot(k);
      const int64_t l = std::lcm(mx, my);
      if (l > kMaxSafeInteger) return cannot(k);
      out[k] = l;
    } else {
      return cannot(k);
    }
  }
  // additionalProperties of one part applies to the other part's properties it does not list.
  for (int side = 0; side < 2; ++side) {
    const json& self = side == 0 ? a : b;
    const json& other = side == 0 ? b : a;
    auto ap = self.find("additionalProperties");
    if (ap == self.end() || (ap->is_boolean() && ap->get<bool>())) continue;
    if (both("additionalProperties") && a["additionalProperties"] != b["additionalProperties"]) {
      return cannot("additionalProperties");
    }
    const json own = self.value("properties", json::object());
    if (auto op = other.find("properties"); op != other.end() && op->is_object()) {
      for (const auto& [name, _] : op->items()) {
        if (own.contains(name)) continue;
        json& p = out["properties"][name];
        p = json{{"allOf", json::array({p, *ap})}};
      }
    }
    if (auto req = other.find("required"); req != other.end() && req->is_array()) {
      for (const auto& name : *req) {
        if (!name.is_string() || own.contains(name.get<std::string>())) continue;
        if (!out["properties"].contains(name.get<std::string>())) {
          out["properties"][name.get<std::string>()] = *ap;
        }
      }
    }
  }
  // enum/const: the values both parts allow.
  auto values = [](const json& s) -> std::optional<json> {
    if (auto c = s.find("const"); c != s.end()) return json::array({*c});
    if (auto e = s.find("enum"); e != s.end() && e->is_array()) return *e;
    return std::nullopt;
  };
  const auto va = values(a), vb = values(b);
  if (va || vb) {
    out.erase("const");
    json v = json::array();
    if (va && vb) {
      for (const auto& x : *va) {
        if (std::find(vb->begin(), vb->end(), x) != vb->end()) v.push_back(x);
      }
      if (v.empty()) return json(false);
    } else {
      v = va ? *va : *vb;
    }
    out["enum"] = std::move(v);
  }
  if (both("anyOf") || both("oneOf") || (a.contains("anyOf") && b.contains("oneOf")) ||
      (a.contains("oneOf") && b.contains("anyOf"))) {
    return unsupported(where, "allOf of two parts that each have anyOf/oneOf");
  }
  if (both("prefixItems") && a["prefixItems"] != b["prefixItems"]) return cannot("prefixItems");
  return out;
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

std::bitset<256> JsonSchemaCompiler::first_bytes(int32_t i) const {
  const JsonSchema::Node& n = out_->nodes_[static_cast<size_t>(i)];
  std::bitset<256> b;
  if (!n.alternatives.empty()) {
    for (int32_t a : n.alternatives) b |= first_bytes(a);
    return b;
  }
  if (!n.literals.empty()) {
    for (const auto& l : n.literals) b.set(static_cast<uint8_t>(l[0]));
    return b;
  }
  return first_bytes_of_types(n.types);
}

// anyOf/oneOf: the alternatives (each merged with the schema's other keywords), nested ones
// spliced in, enum/const-only ones merged, unsatisfiable ones dropped; the rest must start with
// different bytes, so the value's first byte picks exactly one.
Status JsonSchemaCompiler::alternatives(int32_t index, const json& s, const std::string& where,
                                        int depth) {
  if (s.contains("anyOf") && s.contains("oneOf")) {
    return unsupported(where, "both 'anyOf' and 'oneOf' in one schema");
  }
  const bool one = s.contains("oneOf");
  const char* kw = one ? "oneOf" : "anyOf";
  const json& list = s[kw];
  if (!list.is_array() || list.empty()) return bad(where, fmt::format("'{}' must be a non-empty list", kw));
  json rest = s;
  rest.erase(kw);
  bool constrained = false;
  for (const auto& [k, _] : rest.items()) constrained |= annotations().count(k) == 0;
  std::vector<int32_t> alts;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string w = fmt::format("{}.{}[{}]", where, kw, i);
    int32_t a = 0;
    if (constrained) {
      TS_ASSIGN_OR_RETURN(json m, merge(rest, list[i], w, depth + 1));
      TS_ASSIGN_OR_RETURN(a, add(m, w, depth + 1));
    } else {
      TS_ASSIGN_OR_RETURN(a, add(list[i], w, depth + 1));
    }
    if (alternating_.count(a) != 0) {
      return unsupported(w, "an alternative that refers back to its own anyOf/oneOf through $ref "
                            "without an object or array in between");
    }
    const JsonSchema::Node& an = node(a);
    if (filling_.count(a) != 0) {  // an enclosing schema (recursion): its own fields are known
      alts.push_back(a);
      continue;
    }
    if (an.types == 0 && an.alternatives.empty()) continue;  // admits nothing
    // Nested alternatives are spliced in (disjoint leaves keep oneOf exclusive).
    if (!an.alternatives.empty()) {
      for (int32_t x : an.alternatives) alts.push_back(x);
    } else {
      alts.push_back(a);
    }
  }
  // enum/const-only alternatives become one (for oneOf, a value named by two is dropped: it
  // would match both); plain-type alternatives (nothing but `type`) likewise, for anyOf.
  std::vector<int32_t> kept;
  std::vector<std::string> literals;
  std::map<std::string, int> literal_count;
  uint8_t plain_types = 0;
  for (int32_t a : alts) {
    const JsonSchema::Node& an = node(a);
    if (filling_.count(a) != 0) {
      kept.push_back(a);
    } else if (!an.literals.empty()) {
      for (const auto& l : an.literals) {
        if (literal_count[l]++ == 0) literals.push_back(l);
      }
    } else if (!one && an.properties.empty() && an.prefix_items.empty() && an.items == 0 &&
               an.additional == 0 && an.min_items == 0 && an.max_items < 0 &&
               !an.length_bounded() && !an.bounded && an.min_properties == 0 &&
               an.max_properties < 0 && an.alternatives.empty() && an.types != 0) {
      plain_types |= an.types;
    } else {
      kept.push_back(a);
    }
  }
  if (one) {
    literals.erase(std::remove_if(literals.begin(), literals.end(),
                                  [&](const std::string& l) { return literal_count[l] > 1; }),
                   literals.end());
  }
  if (plain_types != 0) {
    TS_ASSIGN_OR_RETURN(int32_t p, reserve(where));
    node(p).types = plain_types;
    kept.push_back(p);
  }
  if (!literals.empty()) {
    if (literals.size() > static_cast<size_t>(JsonSchema::kMaxLiterals)) {
      return bad(where, fmt::format("{} names more than 64 enum/const values", kw));
    }
    TS_ASSIGN_OR_RETURN(int32_t p, reserve(where));
    node(p).literals = literals;
    node(p).types = JsonSchema::kAny;
    kept.push_back(p);
  }
  if (kept.size() > static_cast<size_t>(JsonSchema::kMaxAlternatives)) {
    return unsupported(where, fmt::format("{} with more than 16 alternatives", kw));
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    for (size_t j = i + 1; j < kept.size(); ++j) {
      const auto common = first_bytes(kept[i]) & first_bytes(kept[j]);
      if (common.none()) continue;
      size_t c = 0;
      while (!common.test(c)) ++c;
      return unsupported(where, fmt::format(
          "{}: two alternatives both allow {} (supported: alternatives of different kinds, "
          "e.g. a string or null, an object or an array; enum/const values)",
          kw, describe_byte(c)));
    }
  }
  if (kept.empty()) {
    node(index).types = 0;
    return Status();
  }
  if (kept.size() == 1 && filling_.count(kept[0]) == 0) {
    node(index) = node(kept[0]);
    return Status();
  }
  JsonSchema::Node n;
  n.types = 0;
  for (int32_t a : kept) n.types |= node(a).types;
  n.alternatives = std::move(kept);
  node(index) = std::move(n);
  return Status();
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
    const int64_t cp = code_points(v.get<std::string>());
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
                                s.contains("required");
  if (structured_rules) {
    return unsupported(where, "enum/const object or array values beside properties/items/"
                              "required/additionalProperties");
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
  if (auto t = s.find("type"); t != s.end()) {
    TS_ASSIGN_OR_RETURN(n.types, types_of(*t, where));
  } else if (s.contains("properties") || s.contains("additionalProperties") ||
             s.contains("required") || s.contains("minProperties") || s.contains("maxProperties")) {
    n.types = JsonSchema::kObject;
  } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") ||
             s.contains("maxItems")) {
    n.types = JsonSchema::kArray;
  } else if (s.contains("minLength") || s.contains("maxLength")) {
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
  if (auto u = s.find("uniqueItems"); u != s.end()) {
    if (!u->is_boolean()) return bad(where, "'uniqueItems' must be a boolean");
    if (u->get<bool>() && !(n.max_items >= 0 && n.max_items <= 1)) {
      return unsupported(where, "keyword 'uniqueItems' (true) is not supported yet");
    }
  }
  // Numbers: multipleOf (whole, on integers: a number node then writes integers), bounds.
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
  // enum/const: the values the other keywords allow.
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
  // The node's own fields are in place before its children compile: a $ref cycle back to it
  // (recursion) reads its types and literals.
  node(index) = n;
  // Children, after the node's own fields: a $ref cycle back to this node sees it reserved.
  if (auto a = s.find("additionalProperties"); a != s.end()) {
    if (a->is_boolean() && !a->get<bool>()) {
      n.additional = -1;
    } else {
      TS_ASSIGN_OR_RETURN(n.additional, add(*a, where + ".additionalProperties", depth + 1));
    }
  }
  if (auto p = s.find("properties"); p != s.end()) {
    if (!p->is_object()) return bad(where, "'properties' must be an object");
    if (p->size() > static_cast<size_t>(JsonSchema::kMaxProperties)) return bad(where, "more than 64 properties");
    for (const auto& [k, v] : p->items()) {
      TS_ASSIGN_OR_RETURN(int32_t child, add(v, where + "." + k, depth + 1));
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
        // Not in properties: its value takes additionalProperties' schema.
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
  if (n.items == kNeverNode) {
    const auto cap = static_cast<int64_t>(n.prefix_items.size());
    n.max_items = n.max_items < 0 ? cap : std::min(n.max_items, cap);
    if (n.min_items > n.max_items) n.types = static_cast<uint8_t>(n.types & ~JsonSchema::kArray);
  }
  node(index) = std::move(n);
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
  return Status();
}

}  // namespace json_schema_compile

void JsonSchema::finish() {
  constexpr int32_t kInf = kUnreachable;
  auto add = [](int32_t a, int32_t b) { return std::min(kUnreachable, a + b); };
  for (Node& n : nodes_) n.min_depth = n.min_depth_object = n.min_depth_array = kInf;
  for (bool changed = true; changed;) {
    changed = false;
    for (Node& n : nodes_) {
      int32_t md = kInf, mo = kInf, ma = kInf;
      if (!n.alternatives.empty()) {
        for (int32_t a : n.alternatives) md = std::min(md, nodes_[static_cast<size_t>(a)].min_depth);
      } else if (!n.literals.empty()) {
        md = 1;
      } else {
        if (n.types & (kNull | kBoolean | kString)) md = 1;
        if ((n.types & (kInteger | kNumber)) && (!n.bounded || n.lo <= n.hi)) md = 1;
        if (n.types & kObject) {
          int32_t need = 0, required = 0;
          for (const Property& p : n.properties) {
            if (!p.required) continue;
            ++required;
            need = std::max(need, nodes_[static_cast<size_t>(p.node)].min_depth);
          }
          if (required > 0) need = std::max(need, 1);  // the key's frame
          if (n.min_properties > required) {
            // The extra members: the cheapest optional ones (additional ones repeat).
            std::vector<int32_t> extra;
            for (const Property& p : n.properties) {
              if (!p.required && !p.forbidden) extra.push_back(nodes_[static_cast<size_t>(p.node)].min_depth);
            }
            std::sort(extra.begin(), extra.end());
            const int64_t missing = n.min_properties - required;
            int32_t worst = 1;
            if (n.additional >= 0) {
              const int32_t ad = nodes_[static_cast<size_t>(n.additional)].min_depth;
              int64_t taken = 0;
              for (int32_t e : extra) {
                if (taken == missing || e > ad) break;
                worst = std::max(worst, e);
                ++taken;
              }
              if (taken < missing) worst = std::max(worst, ad);
            } else if (static_cast<int64_t>(extra.size()) < missing) {
              worst = kInf;
            } else {
              worst = std::max(worst, extra[static_cast<size_t>(missing - 1)]);
            }
            need = std::max(need, worst);
          }
          if (n.max_properties >= 0 && n.max_properties < required) need = kInf;
          mo = add(need, 1);
        }
        if (n.types & kArray) {
          int32_t need = 0;
          const int64_t upto = std::min<int64_t>(n.min_items, static_cast<int64_t>(n.prefix_items.size()) + 1);
          for (int64_t i = 0; i < upto; ++i) {
            need = std::max(need, nodes_[static_cast<size_t>(n.item_node(i))].min_depth);
          }
          ma = add(need, 1);
        }
        md = std::min({md, mo, ma});
      }
      if (md != n.min_depth || mo != n.min_depth_object || ma != n.min_depth_array) {
        n.min_depth = md;
        n.min_depth_object = mo;
        n.min_depth_array = ma;
        changed = true;
      }
    }
  }
}

Result<std::shared_ptr<const JsonSchema>> JsonSchema::compile(const nlohmann::json& schema) {
  auto s = std::shared_ptr<JsonSchema>(new JsonSchema());
  s->nodes_.push_back(Node{});  // 0: any value
  Node never;
  never.types = 0;
  s->nodes_.push_back(never);  // 1: no value
  json_schema_compile::JsonSchemaCompiler c(schema, s.get());
  TS_ASSIGN_OR_RETURN(s->root_, c.add(schema, "", 0));
  TS_RETURN_IF_ERROR(c.finish());
  return std::shared_ptr<const JsonSchema>(std::move(s));
}

std::shared_ptr<const JsonSchema> JsonSchema::any_object() {
  auto s = std::shared_ptr<JsonSchema>(new JsonSchema());
  s->nodes_.push_back(Node{});
  Node object;
  object.types = kObject;
  s->nodes_.push_back(object);
  s->root_ = 1;
  s->finish();
  return s;
}

}  // namespace tessera::engine
