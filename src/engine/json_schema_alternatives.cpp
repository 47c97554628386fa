#include "tessera/engine/json_schema_compiler.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <vector>

// anyOf/oneOf: alternatives told apart by their first byte.
namespace tessera::engine::json_schema_compile {

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

// The alternatives' nodes, each merged with the schema's other keywords (`rest`) when it has
// any; nested anyOf/oneOf spliced in (disjoint leaves keep oneOf exclusive), unsatisfiable ones
// dropped.
Result<std::vector<int32_t>> JsonSchemaCompiler::alternative_nodes(const json& list, const json& rest,
                                                                   const char* kw,
                                                                   const std::string& where, int depth) {
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
    } else if (!an.alternatives.empty()) {
      alts.insert(alts.end(), an.alternatives.begin(), an.alternatives.end());
    } else if (an.types != 0) {
      alts.push_back(a);
    }
  }
  return alts;
}

// enum/const-only alternatives become one node (for oneOf, a value named by two is dropped: it
// would match both); plain-type alternatives (nothing but `type`) likewise, for anyOf. The rest
// are kept as they are.
Result<std::vector<int32_t>> JsonSchemaCompiler::combine_alternatives(const std::vector<int32_t>& alts,
                                                                      bool one, const char* kw,
                                                                      const std::string& where) {
  std::vector<int32_t> kept;
  std::vector<std::string> literals;
  std::map<std::string, int> literal_count;
  uint8_t plain_types = 0;
  for (int32_t a : alts) {
    const JsonSchema::Node& an = node(a);
    const bool plain = an.properties.empty() && an.prefix_items.empty() && an.items == 0 &&
                       an.additional == 0 && an.min_items == 0 && an.max_items < 0 &&
                       !an.length_bounded() && !an.bounded && an.min_properties == 0 &&
                       an.max_properties < 0 && an.alternatives.empty() && an.types != 0;
    if (filling_.count(a) != 0) {
      kept.push_back(a);
    } else if (!an.literals.empty()) {
      for (const auto& l : an.literals) {
        if (literal_count[l]++ == 0) literals.push_back(l);
      }
    } else if (!one && plain) {
      plain_types |= an.types;
    } else {
      kept.push_back(a);
    }
  }
  if (one) {
    std::erase_if(literals, [&](const std::string& l) { return literal_count[l] > 1; });
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
  return kept;
}

// Two or more object alternatives that all require one property (the first such in the first
// alternative's order) whose values are enum/const literals no two alternatives share: one
// union node (JsonSchema::Node::tag_alternatives) in their place, its tag node listing every
// alternative's values. Otherwise `kept` unchanged.
Result<std::vector<int32_t>> JsonSchemaCompiler::discriminated_union(const std::vector<int32_t>& kept,
                                                                     const char* kw,
                                                                     const std::string& where) {
  std::vector<int32_t> objects, rest;
  for (int32_t a : kept) {
    const JsonSchema::Node& an = node(a);
    const bool object = an.types == JsonSchema::kObject && an.literals.empty() &&
                        an.alternatives.empty() && an.tag_alternatives.empty() &&
                        filling_.count(a) == 0;
    (object ? objects : rest).push_back(a);
  }
  if (objects.size() < 2) return kept;
  // The tag property of alternative `a` named `key`: its literal node, or -1.
  const auto tag_node = [&](int32_t a, const std::string& key) -> int32_t {
    for (const JsonSchema::Property& p : node(a).properties) {
      if (p.key != key) continue;
      const JsonSchema::Node& pn = node(p.node);
      const bool literal_only = !pn.literals.empty() && pn.alternatives.empty() && filling_.count(p.node) == 0;
      return p.required && !p.forbidden && literal_only ? p.node : -1;
    }
    return -1;
  };
  for (const JsonSchema::Property& candidate : node(objects[0]).properties) {
    std::vector<std::string> tags;
    std::vector<int32_t> owners;
    std::set<std::string> seen;
    bool ok = true;
    for (int32_t a : objects) {
      const int32_t t = tag_node(a, candidate.key);
      if (t < 0) {
        ok = false;
        break;
      }
      for (const std::string& l : node(t).literals) {
        // Distinct texts of one value (1 and 1.0) would let an object match two alternatives.
        ok = ok && seen.insert(json::parse(l).dump()).second;
        tags.push_back(l);
        owners.push_back(a);
      }
      if (!ok) break;
    }
    if (!ok) continue;
    const std::string key = candidate.key;  // reserve() below may move the nodes
    if (tags.size() > static_cast<size_t>(JsonSchema::kMaxLiterals)) {
      return bad(where, fmt::format("{}: the discriminator '{}' has more than 64 values", kw, key));
    }
    TS_ASSIGN_OR_RETURN(int32_t tag, reserve(where));
    node(tag).literals = std::move(tags);
    TS_ASSIGN_OR_RETURN(int32_t u, reserve(where));
    JsonSchema::Node& un = node(u);
    un.types = JsonSchema::kObject;
    un.properties.push_back({key, tag, true, false});
    un.additional = -1;
    un.tag_alternatives = std::move(owners);
    rest.push_back(u);
    return rest;
  }
  return kept;
}

// anyOf/oneOf: the alternatives (alternative_nodes, combine_alternatives) must start with
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
  TS_ASSIGN_OR_RETURN(std::vector<int32_t> alts, alternative_nodes(list, rest, kw, where, depth));
  TS_ASSIGN_OR_RETURN(std::vector<int32_t> kept, combine_alternatives(alts, one, kw, where));
  TS_ASSIGN_OR_RETURN(kept, discriminated_union(kept, kw, where));
  for (size_t i = 0; i < kept.size(); ++i) {
    for (size_t j = i + 1; j < kept.size(); ++j) {
      const auto common = first_bytes(kept[i]) & first_bytes(kept[j]);
      if (common.none()) continue;
      size_t c = 0;
      while (!common.test(c)) ++c;
      return unsupported(where, fmt::format(
          "{}: two alternatives both allow {} (supported: alternatives of different kinds, "
          "e.g. a string or null, an object or an array; enum/const values; objects that all "
          "require one property with distinct enum/const values)",
          kw, describe_byte(c)));
    }
  }
  if (kept.empty()) {
    node(index).types = 0;
  } else if (kept.size() == 1 && filling_.count(kept[0]) == 0) {
    node(index) = node(kept[0]);
  } else {
    JsonSchema::Node n;
    n.types = 0;
    for (int32_t a : kept) n.types |= node(a).types;
    n.alternatives = std::move(kept);
    node(index) = std::move(n);
  }
  return Status();
}

}  // namespace tessera::engine::json_schema_compile
