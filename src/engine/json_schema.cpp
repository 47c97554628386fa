#include "tessera/engine/json_schema.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string_view>

namespace tessera::engine {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 20;  // below JsonMatcher::kMaxDepth: a required nesting always fits
constexpr size_t kMaxNodes = 4096;

Status bad(const std::string& where, const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, fmt::format("response_format schema{}: {}", where, what));
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

// The key as the matcher sees it between quotes: JSON-escaped.
std::string escaped_key(const std::string& key) {
  const std::string d = json(key).dump();
  return d.substr(1, d.size() - 2);
}

}  // namespace

Result<std::shared_ptr<const JsonSchema>> JsonSchema::compile(const nlohmann::json& schema) {
  auto s = std::shared_ptr<JsonSchema>(new JsonSchema());
  s->nodes_.push_back(Node{});  // 0: any value
  TS_ASSIGN_OR_RETURN(s->root_, s->add(schema, "", 0));
  return std::shared_ptr<const JsonSchema>(std::move(s));
}

std::shared_ptr<const JsonSchema> JsonSchema::any_object() {
  auto s = std::shared_ptr<JsonSchema>(new JsonSchema());
  s->nodes_.push_back(Node{});
  Node object;
  object.types = kObject;
  s->nodes_.push_back(object);
  s->root_ = 1;
  return s;
}

Result<int32_t> JsonSchema::add(const nlohmann::json& schema, const std::string& where,
                                int depth) {
  if (depth > kMaxDepth) return bad(where, "nested deeper than 20 levels");
  if (nodes_.size() >= kMaxNodes) return bad(where, "more than 4096 subschemas");
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) return bad(where, "the schema 'false' accepts nothing");
    return 0;
  }
  if (!schema.is_object()) return bad(where, "a schema must be an object or a boolean");
  static const std::set<std::string_view> kIgnored = {
      "title", "description", "default", "examples", "$schema", "$id", "format", "strict",
      "$comment"};
  static const std::set<std::string_view> kKnown = {
      "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
      "minLength", "maxLength", "enum", "const"};
  for (const auto& [k, v] : schema.items()) {
    if (kIgnored.count(k) == 0 && kKnown.count(k) == 0) {
      return Status(ErrorCode::kUnsupported,
                    fmt::format("response_format schema{}: keyword '{}' is not supported "
                                "(supported: type, properties, required, additionalProperties, "
                                "items, minItems, maxItems, minLength, maxLength, enum, const)",
                                where, k));
    }
  }
  Node n;
  if (auto t = schema.find("type"); t != schema.end()) {
    n.types = 0;
    if (t->is_array()) {
      if (t->empty()) return bad(where, "'type' is an empty list");
      for (const auto& one : *t) {
        TS_ASSIGN_OR_RETURN(uint8_t b, type_bit(one, where));
        n.types |= b;
      }
    } else {
      TS_ASSIGN_OR_RETURN(n.types, type_bit(*t, where));
    }
  } else if (schema.contains("properties") || schema.contains("additionalProperties") ||
             schema.contains("required")) {
    n.types = kObject;
  } else if (schema.contains("items") || schema.contains("minItems") ||
             schema.contains("maxItems")) {
    n.types = kArray;
  } else if (schema.contains("minLength") || schema.contains("maxLength")) {
    n.types = kString;
  }
  auto literal = [&](const json& v) -> Status {
    if (v.is_structured()) return bad(where, "enum/const values must be strings, numbers, booleans or null");
    n.literals.push_back(v.dump());
    return Status();
  };
  if (auto e = schema.find("enum"); e != schema.end()) {
    if (!e->is_array() || e->empty()) return bad(where, "'enum' must be a non-empty list");
    if (e->size() > static_cast<size_t>(kMaxLiterals)) return bad(where, "'enum' has more than 64 values");
    for (const auto& v : *e) TS_RETURN_IF_ERROR(literal(v));
  }
  if (auto c = schema.find("const"); c != schema.end()) {
    if (!n.literals.empty()) return bad(where, "both 'enum' and 'const'");
    TS_RETURN_IF_ERROR(literal(*c));
  }
  const int32_t index = static_cast<int32_t>(nodes_.size());
  nodes_.push_back(Node{});  // reserved: children are added after it
  if (auto p = schema.find("properties"); p != schema.end()) {
    if (!p->is_object()) return bad(where, "'properties' must be an object");
    if (p->size() > static_cast<size_t>(kMaxProperties)) return bad(where, "more than 64 properties");
    for (const auto& [k, v] : p->items()) {
      TS_ASSIGN_OR_RETURN(int32_t child, add(v, where + "." + k, depth + 1));
      n.properties.push_back({escaped_key(k), child, false});
    }
  }
  if (auto r = schema.find("required"); r != schema.end()) {
    if (!r->is_array()) return bad(where, "'required' must be a list");
    for (const auto& name : *r) {
      if (!name.is_string()) return bad(where, "'required' must list strings");
      const std::string key = escaped_key(name.get<std::string>());
      bool found = false;
      for (auto& prop : n.properties) {
        if (prop.key == key) prop.required = found = true;
      }
      if (!found) {
        return bad(where, fmt::format("required property '{}' is not in 'properties'",
                                      name.get<std::string>()));
      }
    }
  }
  if (auto a = schema.find("additionalProperties"); a != schema.end()) {
    if (a->is_boolean() && !a->get<bool>()) {
      n.additional = -1;
    } else {
      TS_ASSIGN_OR_RETURN(n.additional, add(*a, where + ".additionalProperties", depth + 1));
    }
  }
  if (auto it = schema.find("items"); it != schema.end()) {
    TS_ASSIGN_OR_RETURN(n.items, add(*it, where + "[]", depth + 1));
  }
  auto count = [&](const char* key, int64_t& out) -> Status {
    auto v = schema.find(key);
    if (v == schema.end()) return Status();
    if (!v->is_number_integer() || v->get<int64_t>() < 0) {
      return bad(where, fmt::format("'{}' must be a non-negative integer", key));
    }
    out = v->get<int64_t>();
    return Status();
  };
  TS_RETURN_IF_ERROR(count("minItems", n.min_items));
  TS_RETURN_IF_ERROR(count("maxItems", n.max_items));
  if (n.max_items >= 0 && n.max_items < n.min_items) return bad(where, "maxItems < minItems");
  TS_RETURN_IF_ERROR(count("minLength", n.min_length));
  TS_RETURN_IF_ERROR(count("maxLength", n.max_length));
  if (n.max_length >= 0 && n.max_length < n.min_length) return bad(where, "maxLength < minLength");
  if (n.min_length > kMaxStringLength || n.max_length > kMaxStringLength) {
    return bad(where, "minLength/maxLength above 1000000");
  }
  if (n.types == 0) return bad(where, "no type allowed");
  nodes_[static_cast<size_t>(index)] = std::move(n);
  return index;
}

}  // namespace tessera::engine
