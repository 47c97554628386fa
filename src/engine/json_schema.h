// JsonSchema: the part of JSON Schema (draft 2020-12, with the draft-7 spellings people still
// send) that structured output (`response_format`, forced tool calls) enforces, compiled from a
// request's schema into a graph of nodes that JsonMatcher walks. Every keyword is either enforced
// exactly (every output validates) or refused with kUnsupported naming it; annotations are
// ignored. docs/STRUCTURED_OUTPUT.md has the table.
//
// Enforced: `type` (a name or a list), `enum` and `const` of any JSON value (the output is one of
// their compact texts; values the node's other keywords exclude are dropped), `properties`,
// `required` (a name `properties` lacks takes `additionalProperties`' schema),
// `additionalProperties` (boolean or schema), `minProperties`/`maxProperties`, `items`,
// `prefixItems` (and draft 7's `items` list with `additionalItems`), `minItems`/`maxItems`,
// `minLength`/`maxLength` (code points; an escape counts as one), `pattern` (RegexDfa: the
// ECMA-262 subset people write), `format` date, time, date-time, uuid, email and ipv4 (as
// patterns; other formats are annotations), `minimum`/`maximum`/
// `exclusiveMinimum`/`exclusiveMaximum` (integers exactly; other numbers are written without an
// exponent, with at most 12 fraction digits, bounds compared exactly against the decimal text),
// `multipleOf` (a whole number, on integers), `uniqueItems` (true where the items are a finite
// set of enum/const values or booleans: each written once), `patternProperties` (up to
// kMaxPatternProperties patterns), boolean schemas anywhere,
// `$ref` to a JSON pointer in the same document (`#`, `#/$defs/X`, `#/definitions/X`, ...;
// recursive schemas too), `allOf` (merged into one schema where the merge is exact, else refused),
// `anyOf`/`oneOf` whose alternatives start with different bytes (a string vs null, an object vs an
// array, ...: one alternative is chosen by the value's first byte, so oneOf's exclusivity holds;
// alternatives that are only enum/const values are merged; objects that all require one property
// with distinct enum/const values, a discriminated union, are chosen by that property written
// first; other overlaps are refused).
// Whole-number decimals (`"maxItems": 2.0`) are taken where integers are expected.
// Annotations (ignored): title, description, default, examples, $schema, $id, $comment, other
// formats (an annotation in 2020-12), deprecated, readOnly, writeOnly, contentMediaType,
// contentEncoding, discriminator, nullable, strict, $defs/definitions (containers for $ref).
// Limits: kMaxProperties per object, kMaxLiterals per enum, kMaxNodes nodes, kMaxDepth nesting of
// the schema text, kMaxRefHops chained $refs. A value must fit JsonMatcher's nesting limit: each
// node knows the fewest stack frames its smallest value needs (min_depth), so the matcher never
// opens a value it could not close.
// Thread-safety: immutable after compile(); share it between sequences.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessera/base/status.h"
#include "tessera/engine/pattern_lengths.h"
#include "tessera/engine/regex_dfa.h"

namespace tessera::engine {

namespace json_schema_compile {
class JsonSchemaCompiler;
}

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
  // Fixed-point numbers for bounds: value * kScale (12 fraction digits); an integer-only node
  // keeps plain integers (scale 1).
  __extension__ typedef __int128 Fixed;
  static constexpr int kFractionDigits = 12;
  static constexpr int kMaxIntegerDigits = 18;  // |integer part| < 10^18 where bounds apply
  static constexpr int32_t kUnreachable = 1 << 20;  // min_depth of a node no value satisfies

  struct Property {
    std::string key;   // as it appears between the quotes (JSON-escaped)
    int32_t node = 0;
    bool required = false;
    bool forbidden = false;  // `"key": false`: the key may not appear
  };
  struct Node {
    uint8_t types = kAny;               // 0: no value (the schema `false`)
    std::vector<std::string> literals;  // enum/const: compact JSON texts; non-empty = one of them
    std::vector<int32_t> alternatives;  // anyOf/oneOf: nodes with pairwise distinct first bytes
    // A discriminated union of objects (anyOf/oneOf whose object alternatives all require one
    // property with enum/const values no two share): this node is an object whose only property
    // is that tag, written first; once its value is read (literal i of the tag's node), the
    // object goes on as tag_alternatives[i]'s. Empty for any other node.
    std::vector<int32_t> tag_alternatives;
    std::vector<Property> properties;   // at most kMaxProperties
    int32_t additional = 0;             // node of additional properties' values; -1: none allowed
    // patternProperties (at most kMaxPatternProperties): a key that names no declared property
    // takes pattern_nodes[S - 1], S the set of patterns (bit i: pattern_keys[i]) its decoded
    // bytes match (a search, as `pattern`); S empty: `additional`. pattern_nodes[S - 1] is the
    // allOf of those patterns' schemas; a declared property a pattern matches had that pattern's
    // schema merged into its own at compile time.
    std::vector<std::shared_ptr<const RegexDfa>> pattern_keys;
    std::vector<int32_t> pattern_nodes;
    int64_t min_properties = 0, max_properties = -1;
    std::vector<int32_t> prefix_items;  // nodes of the first items
    int32_t items = 0;                  // node of the items after prefix_items
    int64_t min_items = 0, max_items = -1;
    // uniqueItems: true over a finite item set: no prefix_items, `items` is enum/const values
    // (booleans and null written as such), no two equal; max_items is at most their number.
    bool unique_items = false;
    int64_t min_length = 0, max_length = -1;  // string characters; -1: no bound
    // `pattern`, or a `format` written as one (date, time, date-time, uuid, email, ipv4): the
    // string's value bytes walk it (escapes decoded). With length bounds, pattern_lengths too.
    std::shared_ptr<const RegexDfa> pattern;
    // A pattern with minLength/maxLength: which automaton states can still reach a match of an
    // allowed length (null for a pattern alone).
    std::shared_ptr<const PatternLengths> pattern_lengths;
    // Numeric bounds (inclusive, after exclusive bounds were moved to the nearest allowed value):
    // integers for an integer-only node, Fixed (kFractionDigits) otherwise. Present only when
    // `bounded`; then numbers have no exponent, at most kMaxIntegerDigits integer digits and
    // kFractionDigits fraction digits.
    bool bounded = false;
    Fixed lo = 0, hi = 0;
    int64_t multiple_of = 0;  // integers only; 0: none
    // Fewest stack frames a value of this node needs, in all and per kind (kUnreachable: none).
    int32_t min_depth = 1, min_depth_object = 1, min_depth_array = 1;

    bool length_bounded() const { return min_length > 0 || max_length >= 0; }
    bool integer_only() const { return !(types & kNumber); }
    int32_t item_node(int64_t index) const {
      return index < static_cast<int64_t>(prefix_items.size())
                 ? prefix_items[static_cast<size_t>(index)]
                 : items;
    }
  };
  static constexpr int kMaxProperties = 64;
  static constexpr int kMaxLiterals = 64;
  static constexpr int kMaxAlternatives = 16;
  static constexpr int kMaxPatternProperties = 4;
  static constexpr int64_t kMaxStringLength = 1'000'000;

  // Node 0 accepts any JSON value, node 1 none; the root is root().
  static Result<std::shared_ptr<const JsonSchema>> compile(const nlohmann::json& schema);
  // Any JSON object (response_format json_object).
  static std::shared_ptr<const JsonSchema> any_object();
  // Not JSON: text the whole of which `dfa` (RegexDfa::Match::kFull) accepts, for the regex and
  // choice structured outputs; the matcher walks the automaton instead of JSON's grammar.
  static std::shared_ptr<const JsonSchema> raw_text(std::shared_ptr<const RegexDfa> dfa);
  // A choice among fixed texts (at most kMaxChoices, each at most kMaxChoiceBytes): the output is
  // exactly one of them.
  static Result<std::shared_ptr<const JsonSchema>> choice(const std::vector<std::string>& options);
  static constexpr size_t kMaxChoices = 1024;
  static constexpr size_t kMaxChoiceBytes = 4096;

  const Node& node(int32_t i) const { return nodes_[static_cast<size_t>(i)]; }
  int32_t root() const { return root_; }
  const RegexDfa* raw() const { return raw_.get(); }  // non-null for raw_text()/choice()
  size_t size() const { return nodes_.size(); }

 private:
  friend class json_schema_compile::JsonSchemaCompiler;
  void finish();  // computes every node's min_depth

  std::vector<Node> nodes_;
  int32_t root_ = 0;
  std::shared_ptr<const RegexDfa> raw_;
};

}  // namespace tessera::engine
