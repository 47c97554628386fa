// The JSON Schema compiler's parts (internal to JsonSchema::compile, json_schema.h): limits,
// keyword tables, number and type helpers, and JsonSchemaCompiler, which builds the node graph.
// json_schema_compiler.cpp compiles one schema object into nodes (keywords, $ref sharing),
// json_schema_alternatives.cpp anyOf/oneOf, json_schema_merge.cpp resolves $ref pointers and
// merges allOf exactly; json_schema.cpp holds the graph (min_depth) and compile().
// Not thread-safe: one compiler per compile() call.
#pragma once

#include <bitset>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/base/status.h"
#include "tessera/engine/json_schema.h"

namespace tessera::engine::json_schema_compile {

using nlohmann::json;
using Fixed = JsonSchema::Fixed;

inline constexpr int kMaxDepth = 32;  // nesting of the schema's text (recursion goes through $ref)
inline constexpr size_t kMaxNodes = 4096;
inline constexpr int kMaxRefHops = 32;
// Merge and flatten steps per schema: allOf over $refs that themselves merge can otherwise grow
// exponentially with the nesting (a hostile schema).
inline constexpr int64_t kMaxWork = 20000;
inline constexpr int32_t kAnyNode = 0;
inline constexpr int32_t kNeverNode = 1;
inline constexpr int64_t kMaxMagnitude = 999'999'999'999'999'999;  // 18 digits
inline constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;  // multipleOf: exact in a double


inline constexpr const char* kEnforcedList =
    "type, enum, const, properties, required, additionalProperties, minProperties, "
    "maxProperties, patternProperties, items, prefixItems, additionalItems, minItems, maxItems, "
    "uniqueItems (true over enum/boolean items), "
    "minLength, maxLength, pattern, format (date, time, date-time, uuid, email, ipv4), minimum, "
    "maximum, exclusiveMinimum, exclusiveMaximum, multipleOf "
    "(whole numbers), $ref, $defs, allOf, anyOf, oneOf";

Status bad(const std::string& where, const std::string& what);
Status unsupported(const std::string& where, const std::string& what);
const std::set<std::string_view>& annotations();
const std::set<std::string_view>& enforced();
Result<uint8_t> type_bit(const json& name, const std::string& where);
Result<uint8_t> types_of(const json& t, const std::string& where);
json type_json(uint8_t bits);
std::string escaped_key(const std::string& key);
bool whole(const json& v, int64_t* out);
Fixed pow10(int n);
Fixed scaled(double v, int digits, bool ceil);
Fixed bound(const json& v, bool lower, bool exclusive, bool integer_only);
int64_t code_points(const std::string& s);
std::bitset<256> first_bytes_of_types(uint8_t t);
std::string describe_byte(size_t c);
// The pattern a `format` is written as (date, time, date-time, uuid, email, ipv4); empty for a
// format left as an annotation.
std::string_view format_pattern(std::string_view format);

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
  Status own_keywords(JsonSchema::Node& n, const json& s, const std::string& where) const;
  Status number_keywords(JsonSchema::Node& n, const json& s, const std::string& where) const;
  Status literal_keywords(JsonSchema::Node& n, const json& s, const std::string& where) const;
  Status string_pattern(JsonSchema::Node& n, const json& s, const std::string& where) const;
  Status object_children(JsonSchema::Node& n, const json& s, const std::string& where, int depth);
  Status array_children(JsonSchema::Node& n, const json& s, const std::string& where, int depth);
  Status pattern_properties(JsonSchema::Node& n, const json& s, const std::string& where, int depth,
                            std::vector<json>* schemas);
  static uint32_t matching_patterns(const JsonSchema::Node& n, const std::string& name);
  Status unique_items(JsonSchema::Node& n, const json& s, const std::string& where, int depth);
  Status check_pattern_overlaps() const;
  Status alternatives(int32_t index, const json& s, const std::string& where, int depth);
  Result<std::vector<int32_t>> alternative_nodes(const json& list, const json& rest, const char* kw,
                                                 const std::string& where, int depth);
  Result<std::vector<int32_t>> combine_alternatives(const std::vector<int32_t>& alts, bool one,
                                                    const char* kw, const std::string& where);
  Result<std::vector<int32_t>> discriminated_union(const std::vector<int32_t>& kept, const char* kw,
                                                  const std::string& where);
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

}  // namespace tessera::engine::json_schema_compile
