#include "tessera/engine/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "tessera/engine/json_schema_compiler.h"

namespace tessera::engine {

void JsonSchema::finish() {
  constexpr int32_t kInf = kUnreachable;
  auto add = [](int32_t a, int32_t b) { return std::min(kUnreachable, a + b); };
  for (Node& n : nodes_) n.min_depth = n.min_depth_object = n.min_depth_array = kInf;
  for (bool changed = true; changed;) {
    changed = false;
    for (Node& n : nodes_) {
      int32_t md = kInf, mo = kInf, ma = kInf;
      if (!n.tag_alternatives.empty()) {
        // Opened only where every alternative fits: the tag comes before the choice is known.
        mo = 0;
        for (int32_t a : n.tag_alternatives) {
          mo = std::max(mo, nodes_[static_cast<size_t>(a)].min_depth_object);
        }
        md = mo;
      } else if (!n.alternatives.empty()) {
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

std::shared_ptr<const JsonSchema> JsonSchema::raw_text(std::shared_ptr<const RegexDfa> dfa) {
  auto s = std::shared_ptr<JsonSchema>(new JsonSchema());
  s->nodes_.push_back(Node{});
  s->raw_ = std::move(dfa);
  s->finish();
  return s;
}

Result<std::shared_ptr<const JsonSchema>> JsonSchema::choice(const std::vector<std::string>& options) {
  if (options.empty() || options.size() > kMaxChoices) {
    return Status(ErrorCode::kInvalidArgument,
                  fmt::format("choice: between 1 and {} options", kMaxChoices));
  }
  // One alternation of the options as literals (every regex metacharacter escaped).
  std::string pattern;
  for (const std::string& o : options) {
    if (o.size() > kMaxChoiceBytes) {
      return Status(ErrorCode::kInvalidArgument,
                    fmt::format("choice: an option longer than {} bytes", kMaxChoiceBytes));
    }
    if (!pattern.empty()) pattern += '|';
    pattern += "(?:";
    for (char c : o) {
      if (std::string_view("\\^$.|?*+()[]{}/").find(c) != std::string_view::npos) pattern += '\\';
      pattern += c;
    }
    pattern += ')';
  }
  auto dfa = RegexDfa::compile(pattern, RegexDfa::Match::kFull);
  if (!dfa.is_ok()) {
    return Status(dfa.status().code(), "choice: " + dfa.status().message());
  }
  return raw_text(std::move(dfa).value());
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
