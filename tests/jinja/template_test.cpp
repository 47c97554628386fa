// Unit tests of the Jinja-subset interpreter: expressions, filters, tests, methods, whitespace
// control, scoping, and errors (never crashes) on malformed and hostile templates. Expected
// strings are what Python's jinja2 3.1 prints for the same template (checked by hand with
// /usr/bin/python3 and HF's settings: trim_blocks, lstrip_blocks).
#include <gtest/gtest.h>

#include <string>

#include "tessera/jinja/template.h"

namespace tessera::jinja {
namespace template_test {

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

Dict messages_ctx() {
  Dict sys;
  sys.set("role", "system");
  sys.set("content", "Be brief.");
  Dict user;
  user.set("role", "user");
  user.set("content", "Hi");
  Dict ctx;
  ctx.set("messages", Value(List{Value(sys), Value(user)}));
  ctx.set("bos_token", "<s>");
  ctx.set("add_generation_prompt", true);
  return ctx;
}

TEST(JinjaExpressions, ArithmeticAndPrecedence) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}"),
            "7|9|3|-4|2");
  EXPECT_EQ(render("{{ 7 / 2 }}|{{ 4 / 2 }}|{{ 2 ** 10 }}|{{ 0.1 + 0.2 }}|{{ 1e-5 }}"),
            "3.5|2.0|1024|0.30000000000000004|1e-05");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none ~ true }}|{{ 'ab' * 3 }}|{{ [1] + [2] }}"),
            "a1NoneTrue|ababab|[1, 2]");
  EXPECT_EQ(render("{{ 1 if false }}|{{ 'y' if 1 > 0 else 'n' }}|{{ not 1 == 2 }}"), "|y|True");
  EXPECT_EQ(render("{{ 0 or 'x' }}|{{ 1 and 'y' }}|{{ '' and 1 }}"), "x|y|");
  EXPECT_EQ(render("{{ 'b' in 'abc' }}|{{ 3 not in [1, 2] }}|{{ 'k' in {'k': 1} }}"),
            "True|True|True");
}

TEST(JinjaExpressions, LiteralsReprAndSlices) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, 2.5] }}"), "[1, 'a', None, True, 2.5]");
  EXPECT_EQ(render("{{ {'a': 1, 'b': [1]} }}|{{ \"it's\" }}|{{ ('x', 1) }}"),
            "{'a': 1, 'b': [1]}|it's|('x', 1)");
  EXPECT_EQ(render("{{ 'hello'[1:3] }}|{{ 'hello'[::-1] }}|{{ [1,2,3,4][-2:] }}|{{ 'héllo'[1] }}"),
            "el|olleh|[3, 4]|é");
  EXPECT_EQ(render("{{ 'a\\nb\\u00e9\\'' }}"), "a\nbé'");
  EXPECT_EQ(render("{{ (1, 2) == [1, 2] }}|{{ 2.5 | round }}|{{ 3.5 | round }}"), "False|2.0|4.0");
}

TEST(JinjaExpressions, UndefinedSemantics) {
  EXPECT_EQ(render("[{{ missing }}]{{ missing is defined }}{{ missing | default('d') }}"),
            "[]Falsed");
  EXPECT_EQ(render("{{ x.y is defined }}{{ none.y is defined }}", [] {
              Dict d;
              d.set("x", Value(Dict{}));
              return d;
            }()),
            "FalseFalse");
  auto r = try_render("{{ missing.attr }}");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("'missing' is undefined"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("line 1"), std::string::npos);
}

TEST(JinjaWhitespace, TrimAndLstripBlocksAsHF) {
  // trim_blocks drops the newline after %}; lstrip_blocks the indentation before {%.
  EXPECT_EQ(render("<{% if true %}\n  x\n  {% endif %}\n>"), "<  x\n>");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}c"), "abc");
  EXPECT_EQ(render("a\n  {{- 'b' -}}\n  c"), "abc");
  // {{ }} is not lstripped; comments are trimmed like blocks.
  EXPECT_EQ(render("  {{ 'x' }}\n  {# note #}\ny"), "  x\ny");
  // One trailing newline of the source is dropped; \r\n becomes \n.
  EXPECT_EQ(render("{{ 'x' }}\n"), "x");
  EXPECT_EQ(render("a\r\nb\n\n"), "a\nb\n");
  // raw: tags inside are text.
  EXPECT_EQ(render("a{% raw %}{{ x }}{% if %}{% endraw %}b"), "a{{ x }}{% if %}b");
  EXPECT_EQ(render("a {% raw -%}  x  {%- endraw %} b"), "a x b");
  EXPECT_FALSE(try_render("{% raw %}never closed").is_ok());
  // {%+ keeps the indentation.
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
}

TEST(JinjaStatements, ForLoopVariablesAndFilters) {
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }}{% if not loop.last %},{% endif %}{% endfor %}"),
            "10TrueFalse3,21FalseFalse3,32FalseTrue3");
  EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{% else %}none{% endfor %}"),
            "24");
  EXPECT_EQ(render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=2;");
  EXPECT_EQ(render("{% for x in 'ab' %}{{ loop.previtem }}-{{ loop.nextitem }}|{% endfor %}"),
            "-b|a-|");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}"
                   "{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}"),
            "02");
}

TEST(JinjaStatements, ScopingSetAndNamespace) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}"
                   "{% endfor %}{{ ns.x }}"),
            "4");
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set s %}  hi {{ 1 }} {% endset %}[{{ s }}]"), "[  hi 1 ]");
  EXPECT_EQ(render("{% set s | upper %}hi{% endset %}{{ s }}"), "HI");
  EXPECT_EQ(render("{% filter upper %}ab{{ 'c' }}{% endfilter %}"), "ABC");
}

TEST(JinjaStatements, MacrosAndCallBlocks) {
  EXPECT_EQ(render("{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}"
                   "{{ m(1) }}|{{ m(1, c=3) }}|{{ m(a=2, b=4) }}"),
            "1BNone|1B3|24None");
  EXPECT_EQ(render("{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}in{% endcall %}"),
            "[in]");
}

TEST(JinjaFilters, Strings) {
  EXPECT_EQ(render("{{ '  a b \\n' | trim }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}|"
                   "{{ 'hello wORLD' | title }}|{{ 'hELLO' | capitalize }}"),
            "a b|AB|ab|Hello World|Hello");
  // Python's whitespace includes U+00A0 and U+3000; a malformed byte is never whitespace.
  EXPECT_EQ(render("[{{ '\\u00a0\\u3000x\\u2003' | trim }}]"), "[x]");
  Dict bad;
  bad.set("s", "\x85x\xa0");
  EXPECT_EQ(render("[{{ s | trim }}]", bad), "[\x85x\xa0]");
  EXPECT_EQ(render("{{ 'a-b-c' | replace('-', '+') }}|{{ 'one two  three' | wordcount }}|"
                   "{{ 'x' | length }}|{{ 'héllo' | length }}"),
            "a+b+c|3|1|5");
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}"),
            "a\n  b\n\n  c|  a\n  b");
  EXPECT_EQ(render("{{ '<x>' | e }}|{{ '<b>' | safe }}|{{ '<'|safe + '<' }}"),
            "&lt;x&gt;|<b>|<&lt;");
  EXPECT_EQ(render("{{ 42 | string }}{{ '7' | int + 1 }}{{ 'x' | int }}{{ 2.7 | int }}"), "42802");
}

TEST(JinjaFilters, ToJsonAsHF) {
  Dict d;
  d.set("name", "f");
  d.set("args", Value(List{Value(1), Value(2.5), Value("é\"\n"), Value::none(), Value(true)}));
  d.set("empty", Value(Dict{}));
  Dict ctx;
  ctx.set("d", Value(d));
  EXPECT_EQ(render("{{ d | tojson }}", ctx),
            "{\"name\": \"f\", \"args\": [1, 2.5, \"é\\\"\\n\", null, true], \"empty\": {}}");
  EXPECT_EQ(render("{{ d.args[:2] | tojson(indent=2) }}", ctx), "[\n  1,\n  2.5\n]");
  EXPECT_EQ(render("{{ d | tojson(separators=(',', ':')) }}", ctx),
            "{\"name\":\"f\",\"args\":[1,2.5,\"é\\\"\\n\",null,true],\"empty\":{}}");
  EXPECT_FALSE(try_render("{{ [1] | map('string') | tojson }}").is_ok());  // a generator
}

TEST(JinjaFilters, Sequences) {
  EXPECT_EQ(render("{{ [3, 1, 2] | sort }}|{{ [3, 1, 2] | sort(reverse=true) | first }}|"
                   "{{ [1, 2] | last }}|{{ ['b', 'A', 'a'] | unique | list }}|{{ [1, 2] | sum }}"),
            "[1, 2, 3]|3|2|['b', 'A']|3");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | dictsort }}|{{ {'a': 1} | items | list }}"),
            "[('a', 2), ('b', 1)]|[('a', 1)]");
  EXPECT_EQ(render("{{ [{'t': 'x', 'n': 1}, {'t': 'y', 'n': 2}] | selectattr('t', 'equalto', 'y')"
                   " | map(attribute='n') | list }}|{{ [1, 2, 3] | select('odd') | join(',') }}|"
                   "{{ [{'a': 0}, {'a': 1}] | rejectattr('a') | list | length }}"),
            "[2]|1,3|1");
  EXPECT_EQ(render("{{ ['a', 'b'] | join }}|{{ [1, 2] | map('string') | join('-') }}"), "ab|1-2");
  // A generator is always true and is consumed once iterated, as in Python.
  EXPECT_EQ(render("{% set g = [] | select %}{{ 'yes' if g }}|{% set g = [1] | select %}"
                   "{{ g | list }}{{ g | list }}"),
            "yes|[1][]");
}

TEST(JinjaTests, Builtins) {
  EXPECT_EQ(render("{{ 'a' is string }}{{ 1 is number }}{{ {} is mapping }}{{ [] is iterable }}"
                   "{{ none is none }}{{ 3 is odd }}{{ 4 is divisibleby 2 }}{{ 1 is eq 1 }}"
                   "{{ 'x' is in 'xy' }}{{ true is boolean }}{{ 1 is not string }}"),
            "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrue");
}

TEST(JinjaMethods, StringsAndDicts) {
  EXPECT_EQ(render("{{ ' x '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|"
                   "{{ ' a  b '.split() }}|{{ 'abc'.startswith('a') }}|{{ 'abc'.endswith(('x', 'c')) }}"),
            "x|a|['a', 'b', '', 'c']|['a', 'b']|True|True");
  EXPECT_EQ(render("{{ {'a': 1}.get('a') }}|{{ {'a': 1}.get('b', 2) }}|{{ {'a': 1}.get('b') }}|"
                   "{{ {'a': 1}.keys() | list }}|{{ 'a b'.title() }}|{{ 'x-y'.replace('-', '') }}"),
            "1|2|None|['a']|A B|xy");
  // HF renders in an immutable sandbox: list.append is refused, as jinja2 refuses it there.
  EXPECT_FALSE(try_render("{% set l = [] %}{% set _ = l.append(1) %}").is_ok());
}

TEST(JinjaGlobals, RaiseExceptionStrftimeRange) {
  auto r = try_render("{{ raise_exception('Roles must alternate') }}");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("Roles must alternate"), std::string::npos);
  RenderOptions opt;
  opt.now.tm_year = 124;
  opt.now.tm_mon = 6;
  opt.now.tm_mday = 26;
  EXPECT_EQ(*try_render("{{ strftime_now('%d %b %Y') }}", {}, opt), "26 Jul 2024");
  EXPECT_EQ(render("{{ range(3) | list }}{{ range(1, 7, 2) | list }}"), "[0, 1, 2][1, 3, 5]");
}

TEST(JinjaRealistic, ChatMLWithSystem) {
  const char* tmpl =
      "{{ bos_token }}{% for message in messages %}\n"
      "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] | trim + '<|im_end|>\\n' }}\n"
      "{% endfor %}\n"
      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  EXPECT_EQ(render(tmpl, messages_ctx()),
            "<s><|im_start|>system\nBe brief.<|im_end|>\n\n<|im_start|>user\nHi<|im_end|>\n\n"
            "<|im_start|>assistant\n");
}

TEST(JinjaErrors, SyntaxAndUnsupportedNameTheLine) {
  auto r = try_render("a\n{% if x %}\nb");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("endif"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("line 2: {% if %} is never closed"), std::string::npos)
      << r.status().message();
  r = try_render("x\n\n{% include 'other.jinja' %}");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("line 3"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("include"), std::string::npos);
  for (const char* bad : {"{{", "{{ 1 + }}", "{% for %}", "{{ 'abc }}", "{# open", "{{ (1 }}",
                          "{{ ] }}", "{% endfor %}", "{{ a | }}", "{% set %}", "{{ x[ }}",
                          "{% macro m( %}{% endmacro %}", "{{ 1 ++ }}", "{{ @ }}"}) {
    EXPECT_FALSE(try_render(bad).is_ok()) << bad;
  }
  // Integers are 64-bit: overflow is refused, never wraps (Python would go to big integers).
  for (const char* big : {"{{ 9223372036854775807 + 1 }}", "{{ 2 ** 64 }}", "{{ -(-9223372036854775807 - 1) }}",
                          "{{ (-9223372036854775807 - 1) // -1 }}", "{{ 1e300 | int }}", "{{ 'nan' | float | int }}"}) {
    auto b = try_render(big);
    ASSERT_FALSE(b.is_ok()) << big;
    EXPECT_EQ(b.status().code(), ErrorCode::kUnsupported) << big << ": " << b.status().message();
  }
  EXPECT_EQ(render("{{ 2 ** 62 }}|{{ (-1) ** 1000001 }}|{{ range(9223372036854775806, 9223372036854775807, 5) | list }}"),
            "4611686018427387904|-1|[9223372036854775806]");
  for (const char* bad : {"{{ 'a'.split(',', 'x') }}", "{{ 'a' | indent(none) }}", "{{ 'a' | round }}",
                          "{{ [1] | tojson(indent='x') }}", "{{ ['nan' | float, 1.0] | sort }}",
                          "{{ 'ab'.replace('a', 'b', 'c') }}"}) {
    EXPECT_FALSE(try_render(bad).is_ok()) << bad;
  }
  EXPECT_EQ(render("{{ [1, 2][::9223372036854775807] }}{{ [1, 2][::-9223372036854775807] }}"),
            "[1][2]");
  for (const char* bad : {"{{ 1 + 'a' }}", "{{ 1 / 0 }}", "{{ 5 // 0 }}", "{{ none() }}",
                          "{% for x in 3 %}{% endfor %}", "{{ [1][0:1:0] }}", "{{ {}|tojson(4)|x }}",
                          "{% set a, b = [1] %}", "{{ 1 | length }}", "{{ 'a' < 1 }}"}) {
    EXPECT_FALSE(try_render(bad).is_ok()) << bad;
  }
}

TEST(JinjaErrors, HostileTemplatesHitBounds) {
  RenderOptions opt;
  opt.max_steps = 10000;
  auto r = try_render("{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}",
                      {}, opt);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  r = try_render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted) << r.status().message();
  opt = RenderOptions();
  opt.max_output_bytes = 1000;
  r = try_render("{% for i in range(100) %}{{ 'xxxxxxxxxxxxxxxxxxxx' }}{% endfor %}", {}, opt);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_FALSE(try_render("{{ 'x' * 1000000000000 }}").is_ok());
  // Values nested by a loop (each iteration wraps the last) are bounded, and a namespace cannot
  // hold itself: no deep recursion when printing or freeing, no reference cycle.
  r = try_render("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
                 "{% endfor %}{{ ns.x }}");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted) << r.status().message();
  r = try_render("{% set x = [] %}{% for i in range(100000) %}{% set x = [x, x] %}{% endfor %}");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted) << r.status().message();
  EXPECT_FALSE(try_render("{% set ns = namespace(x=1) %}{% set ns.x = ns %}{{ ns }}").is_ok());
  EXPECT_FALSE(try_render("{% set ns = namespace(x=1) %}{% set ns.x = [ns] %}").is_ok());
  // Deep nesting is refused by the parser instead of overflowing the stack.
  EXPECT_FALSE(try_render("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}").is_ok());
  EXPECT_FALSE(try_render("{{ " + std::string(100000, '[') + " }}").is_ok());
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(try_render(ifs).is_ok());
  EXPECT_FALSE(try_render("{{ " + std::string(50000, '-') + "1 }}").is_ok());
  EXPECT_FALSE(try_render("{{ " + [] {
                 std::string s = "not ";
                 std::string out;
                 for (int i = 0; i < 50000; ++i) out += s;
                 return out;
               }() + "1 }}").is_ok());
}

}  // namespace template_test
}  // namespace tessera::jinja
