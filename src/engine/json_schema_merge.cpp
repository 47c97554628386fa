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

namespace {

Status cannot_merge(const std::string& where, const std::string& k) {
  return unsupported(where, fmt::format("allOf: keyword '{}' appears in two parts with different "
                                        "values, which cannot be merged exactly", k));
}

// One keyword both parts carry (x from one, y from the other), merged into out[k]. False when
// the parts together admit nothing (disjoint types).
Result<bool> merge_keyword(json& out, const std::string& k, const json& x, const json& y,
                           const std::string& where) {
  static const std::set<std::string_view> kLower = {"minItems", "minLength", "minProperties",
                                                    "minimum", "exclusiveMinimum"};
  static const std::set<std::string_view> kUpper = {"maxItems", "maxLength", "maxProperties",
                                                    "maximum", "exclusiveMaximum"};
  if (annotations().count(k) != 0 || x == y) {
    out[k] = x;
  } else if (k == "type") {
    TS_ASSIGN_OR_RETURN(uint8_t tx, types_of(x, where));
    TS_ASSIGN_OR_RETURN(uint8_t ty, types_of(y, where));
    if ((tx & ty) == 0) return false;
    out[k] = type_json(tx & ty);
  } else if (k == "enum" || k == "const") {
    // merge_enum_values, after the keywords
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
  } else if (k == "items" && !x.is_array() && !y.is_array()) {
    out[k] = json{{"allOf", json::array({x, y})}};
  } else if (kLower.count(k) != 0 || kUpper.count(k) != 0) {
    if (!x.is_number() || !y.is_number()) return cannot_merge(where, k);
    const bool x_tighter = kLower.count(k) != 0 ? x.get<double>() >= y.get<double>()
                                                : x.get<double>() <= y.get<double>();
    out[k] = x_tighter ? x : y;
  } else if (k == "multipleOf") {
    int64_t mx = 0, my = 0;
    if (!whole(x, &mx) || !whole(y, &my) || mx <= 0 || my <= 0) return cannot_merge(where, k);
    const int64_t l = std::lcm(mx, my);
    if (l > kMaxSafeInteger) return cannot_merge(where, k);
    out[k] = l;
  } else {
    return cannot_merge(where, k);
  }
  return true;
}

// additionalProperties of one part applies to the properties the other part declares (or
// requires) that it does not list.
Status apply_additional_properties(json& out, const json& a, const json& b, const std::string& where) {
  for (int side = 0; side < 2; ++side) {
    const json& self = side == 0 ? a : b;
    const json& other = side == 0 ? b : a;
    auto ap = self.find("additionalProperties");
    if (ap == self.end() || (ap->is_boolean() && ap->get<bool>())) continue;
    if (other.contains("additionalProperties") && other["additionalProperties"] != *ap) {
      return cannot_merge(where, "additionalProperties");
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
  return Status();
}

// enum/const: out["enum"] holds the values both parts allow. False when none is common.
bool merge_enum_values(json& out, const json& a, const json& b) {
  auto values = [](const json& s) -> std::optional<json> {
    if (auto c = s.find("const"); c != s.end()) return json::array({*c});
    if (auto e = s.find("enum"); e != s.end() && e->is_array()) return *e;
    return std::nullopt;
  };
  const auto va = values(a), vb = values(b);
  if (!va && !vb) return true;
  out.erase("const");
  json v = json::array();
  if (va && vb) {
    for (const auto& x : *va) {
      if (std::find(vb->begin(), vb->end(), x) != vb->end()) v.push_back(x);
    }
    if (v.empty()) return false;
  } else {
    v = va ? *va : *vb;
  }
  out["enum"] = std::move(v);
  return true;
}

}  // namespace

// allOf of two flattened schemas as one, where that is exact; kUnsupported where it is not;
// `false` where the parts admit nothing together.
Result<json> JsonSchemaCompiler::merge(json a, json b, const std::string& where, int depth) const {
  if (++work_ > kMaxWork) return bad(where, "too complex: more than 20000 allOf/$ref merge steps");
  if (a.is_boolean() || b.is_boolean()) return json(false);
  TS_ASSIGN_OR_RETURN(a, flatten(a, where, depth + 1));
  TS_ASSIGN_OR_RETURN(b, flatten(b, where, depth + 1));
  if (a.is_boolean() || b.is_boolean()) return json(false);
  const bool a_alt = a.contains("anyOf") || a.contains("oneOf");
  const bool b_alt = b.contains("anyOf") || b.contains("oneOf");
  if (a_alt && b_alt) return unsupported(where, "allOf of two parts that each have anyOf/oneOf");
  if (a.contains("prefixItems") && b.contains("prefixItems") && a["prefixItems"] != b["prefixItems"]) {
    return cannot_merge(where, "prefixItems");
  }
  // additionalProperties of one part would also have to skip the keys the other part's patterns
  // match (and those patterns' schemas apply to the first part's properties): not merged.
  const auto closed = [](const json& x) {
    auto ap = x.find("additionalProperties");
    return ap != x.end() && !(ap->is_boolean() && ap->get<bool>());
  };
  if ((a.contains("patternProperties") || b.contains("patternProperties")) && (closed(a) || closed(b))) {
    return unsupported(where, "allOf of parts with patternProperties and additionalProperties "
                              "cannot be merged exactly");
  }
  json out = json::object();
  std::set<std::string> keys;
  for (const auto& [k, _] : a.items()) keys.insert(k);
  for (const auto& [k, _] : b.items()) keys.insert(k);
  for (const std::string& k : keys) {
    if (!a.contains(k) || !b.contains(k)) {
      out[k] = a.contains(k) ? a[k] : b[k];
      continue;
    }
    TS_ASSIGN_OR_RETURN(bool some, merge_keyword(out, k, a[k], b[k], where));
    if (!some) return json(false);
  }
  TS_RETURN_IF_ERROR(apply_additional_properties(out, a, b, where));
  if (!merge_enum_values(out, a, b)) return json(false);
  return out;
}

}  // namespace tessera::engine::json_schema_compile
