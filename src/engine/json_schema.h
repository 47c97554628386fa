// JsonSchema: the subset of JSON Schema that structured output (`response_format`) enforces,
// compiled from a request's schema into a flat table of nodes that JsonMatcher walks.
//
// Supported keywords: `type` (a name or a list of names: null, boolean, integer, number, string,
// array, object), `properties`, `required`, `additionalProperties` (true, false or a schema),
// `items`, `minItems`, `maxItems`, `minLength` and `maxLength` (a string's characters: code points,
// an escape counting as one), `enum` and `const` (scalar values: the output is one of their
// canonical JSON texts). Annotations are ignored (`title`, `description`, `default`, `examples`,
// `$schema`, `$id`, `format`, `strict`). Every other keyword is refused by name (kUnsupported):
// a schema that constrains more than is enforced would give output that does not validate.
// A schema without `type` takes the types its other keywords imply (properties: object, items:
// array), else any JSON value.
// Thread-safety: immutable after compile(); share it between sequences.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessera/base/status.h"

namespace tessera::engine {

class JsonSchema {
 public:
  enum Type : uint8_t {
    kNull = 1,
    kBoolean = 2,
    kInteger = 4,
    kNumber = 8,  // integers included
    kString = 16,
    kArray = 32,
    kObject = 64,
    kAny = 127,
  };
  struct Property {
    std::string key;   // as it appears between the quotes (JSON-escaped)
    int32_t node = 0;
    bool required = false;
  };
  struct Node {
    uint8_t types = kAny;
    std::vector<std::string> literals;  // enum/const: canonical texts; non-empty = one of them
    std::vector<Property> properties;   // at most kMaxProperties
    int32_t additional = 0;             // node of additional properties' values; -1: none allowed
    int32_t items = 0;                  // node of array items
    int64_t min_items = 0, max_items = -1;
    int64_t min_length = 0, max_length = -1;  // string characters; -1: no bound
    bool length_bounded() const { return min_length > 0 || max_length >= 0; }
  };
  static constexpr int kMaxProperties = 64;
  static constexpr int kMaxLiterals = 64;
  static constexpr int64_t kMaxStringLength = 1'000'000;

  // Node 0 accepts any JSON value; the root is root().
  static Result<std::shared_ptr<const JsonSchema>> compile(const nlohmann::json& schema);
  // Any JSON object (response_format json_object).
  static std::shared_ptr<const JsonSchema> any_object();

  const Node& node(int32_t i) const { return nodes_[static_cast<size_t>(i)]; }
  int32_t root() const { return root_; }

 private:
  Result<int32_t> add(const nlohmann::json& schema, const std::string& where, int depth);

  std::vector<Node> nodes_;
  int32_t root_ = 0;
};

}  // namespace tessera::engine
