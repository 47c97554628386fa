// GbnfGrammar / GbnfMatcher / TokenConstraint over a grammar: the parser's accepts and refusals,
// the matcher against independent engines (std::regex for grammars written as regexes,
// nlohmann::json::accept for a JSON grammar), hostile grammars within time bounds, random walks
// that end in complete texts, the mask against brute force, and generation on a trained model.
#include "tessera/engine/gbnf_grammar.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tessera/engine/engine.h"
#include "tessera/engine/gbnf_matcher.h"
#include "tessera/engine/token_constraint.h"
#include "tessera/model/architecture.h"
#include "tessera/model/tokenizer/llama2c_tokenizer.h"
#include "test_util.h"

namespace tessera::engine {
namespace gbnf_test {

std::shared_ptr<const GbnfGrammar> compile(const std::string& text) {
  auto g = GbnfGrammar::compile(text);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string() << "\n" << text;
  return g.is_ok() ? *g : *GbnfGrammar::compile("root ::= \"\"");
}

bool accepts(const std::shared_ptr<const GbnfGrammar>& g, const std::string& text) {
  GbnfMatcher m(g);
  return m.feed(text) && m.complete();
}

// A JSON grammar (RFC 8259) in llama.cpp's style, written for this test.
const char* const kJsonGrammar = R"(# JSON, any value, with surrounding whitespace
root   ::= ws value ws
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n\r]*
)";

// A random walk: each byte drawn among those the matcher accepts (all 256 tried, or ASCII only),
// stopping at random once complete, else after `max_len` bytes and the closing bytes.
std::string random_walk(const std::shared_ptr<const GbnfGrammar>& g, std::mt19937& rng, size_t max_len,
                        bool ascii = false) {
  GbnfMatcher m(g);
  std::string out;
  while (out.size() < max_len) {
    if (m.complete() && std::uniform_int_distribution<int>(0, 7)(rng) == 0) return out;
    std::vector<uint8_t> ok;
    for (int b = 0; b < (ascii ? 128 : 256); ++b) {
      GbnfMatcher probe = m;
      if (probe.feed(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
    }
    if (ok.empty()) break;
    const uint8_t b = ok[std::uniform_int_distribution<size_t>(0, ok.size() - 1)(rng)];
    EXPECT_TRUE(m.feed(b));
    out += static_cast<char>(b);
  }
  const auto close = m.closing_bytes();
  EXPECT_TRUE(close.has_value()) << out;
  if (close) {
    EXPECT_TRUE(m.feed(*close)) << out << " + " << *close;
    out += *close;
  }
  EXPECT_TRUE(m.complete()) << out;
  return out;
}

TEST(GbnfGrammarTest, ParsesTheFormat) {
  for (const char* text : {
           "root ::= \"a\"",
           "root ::= \"\"",
           "root::=\"a\"|\"b\"",
           "# comment\nroot ::= x # trailing\n\nx ::= [a-z]+ # letters\n",
           "root ::= \"a\"\n  | \"b\"\n  | x\nx ::= \"c\"",  // continuation lines start with '|'
           "root ::= (\n  \"a\"\n  \"b\" |\n  \"c\"\n)",       // newlines inside a group
           "root ::= [^\\]\\\\\\n] . [\\x41-\\u005A] \"\\U0001F600\" \"\\t\\r\\\"\"",
           "root ::= \"é\" [à-ÿ€] \"日本\"",
           "root ::= a{3} b{2,} c{0,4} d? e* f+\na ::= \"a\"\nb ::= \"b\"\nc ::= \"c\"\nd ::= \"d\"\n"
           "e ::= \"e\"\nf ::= \"f\"",
           "root ::= my-rule_2\nmy-rule_2 ::= \"x\"{ 2 , 5 }",
           "root ::= \"ab\"* [x]",  // a literal repeated as a whole
           "root ::= \"a\" root | \"b\"",  // right recursion
           "root ::= \"(\" root \")\" root | \"\"",
           kJsonGrammar,
       }) {
    auto g = GbnfGrammar::compile(text);
    EXPECT_TRUE(g.is_ok()) << text << ": " << g.status().to_string();
  }
  // An empty literal repeated is empty (found by gbnf_fuzzer: it used to index past the sequence).
  const auto empty = compile("root ::= \"a\" \"\"{1,} \"\"* \"\"{0,3} \"b\"");
  EXPECT_TRUE(accepts(empty, "ab"));
  const auto g = compile("root ::= \"ab\"* [x]\n");
  EXPECT_TRUE(accepts(g, "ababx"));
  EXPECT_FALSE(accepts(g, "abax"));
  const auto u = compile("root ::= [à-ÿ]+ \"\\U0001F600\"? \"\\x41\"");
  EXPECT_TRUE(accepts(u, "àÿéA"));
  EXPECT_TRUE(accepts(u, "é\xF0\x9F\x98\x80" "A"));
  EXPECT_FALSE(accepts(u, "\xC3\x80" "A"));  // À is below à
  GbnfMatcher m(u);
  EXPECT_TRUE(m.feed(uint8_t{0xC3}));   // à..ÿ start with C3
  EXPECT_FALSE(m.feed(uint8_t{0x80}));  // U+00C0
  EXPECT_FALSE(m.feed(uint8_t{0x41}));  // a cut character cannot end
  EXPECT_TRUE(m.feed(uint8_t{0xA9}));   // é
  EXPECT_FALSE(m.feed(uint8_t{0xC4}));  // no U+0100..U+013F
  EXPECT_FALSE(m.feed(uint8_t{0xED}));  // never a surrogate's lead for a class without them
  const auto dot = compile("root ::= .");
  EXPECT_TRUE(accepts(dot, "\xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(accepts(dot, "\xED\xA0\x80"));  // a surrogate is not a character
  EXPECT_FALSE(accepts(dot, "\xC0\x80"));      // overlong
  EXPECT_FALSE(accepts(dot, "\xF4\x90\x80\x80"));  // past U+10FFFF
}

TEST(GbnfGrammarTest, RefusesWithClearMessages) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"x ::= \"a\"", "no 'root'"},
      {"root ::= x", "rule 'x' is used but never defined"},
      {"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
      {"root ::= root \"a\" | \"b\"", "left recursion"},
      {"root ::= x\nx ::= y \"a\"\ny ::= \"\" | x", "left recursion"},
      {"root ::= x? root \"a\" | \"b\"\nx ::= \"c\"", "left recursion"},  // through a nullable prefix
      {"root ::= (\"a\"?)*", "left recursion"},                          // repeating what can be empty
      {"root ::= \"a\\q\"", "unknown escape"},
      {"root ::= \"\\x4\"", "2 hexadecimal digits"},
      {"root ::= \"\\uD800\"", "not a Unicode scalar value"},
      {"root ::= \"\\U00110000\"", "not a Unicode scalar value"},
      {"root ::= \"abc", "unterminated string"},
      {"root ::= [abc", "unterminated character class"},
      {"root ::= [z-a]", "backwards"},
      {"root ::= [^\\x00-\\U0010FFFF]", "matches no character"},
      {"root ::= \"a\"{101}", "above 100"},
      {"root ::= \"a\"{3,2}", "max below min"},
      {"root ::= * \"a\"", "nothing before it"},
      {"root ::= \"a\" )", "expected a symbol"},
      {"root ::= (\"a\"", "expected ')'"},
      {"root = \"a\"", "expected '::='"},
      {"root ::= <[1000]>", "token syntax"},
      {"root ::= x\nx ::= \"a\" x", "can never end"},
      {"root ::= \"\xff\"", "not valid UTF-8"},
      {"root ::= \"a\" \xc3\xa9", "found byte 0xc3"},  // messages stay UTF-8 (JSON error bodies)
      {"root ::= \"\\\xc3\xa9\"", "unknown escape '\\' + byte 0xc3"},
      {std::string(GbnfGrammar::kMaxTextBytes + 1, ' '), "at most"},
      {"root ::= " + std::string(70, '(') + "\"a\"" + std::string(70, ')'), "deeper than 64"},
  };
  for (const auto& [text, want] : bad) {
    auto g = GbnfGrammar::compile(text);
    ASSERT_FALSE(g.is_ok()) << text;
    EXPECT_EQ(g.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(want), std::string::npos)
        << text.substr(0, 80) << " -> " << g.status().message();
    EXPECT_NO_THROW((void)nlohmann::json(g.status().message()).dump()) << text.substr(0, 80);
  }
  // Positions: line and column of the offending character.
  auto g = GbnfGrammar::compile("root ::= x\nx ::= \"a\" \\n");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("line 2, column 11"), std::string::npos) << g.status().message();
  g = GbnfGrammar::compile("root ::= x\n\nx ::= yy\n");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("line 3, column 7: rule 'yy'"), std::string::npos) << g.status().message();
}

// Grammars written as regexes: on random strings the matcher accepts exactly what std::regex
// (ECMAScript, an independent engine) matches in full; and a byte it refuses leaves a prefix of
// nothing the regex matches (checked on the strings that extend it in the sample).
TEST(GbnfMatcherTest, AgreesWithStdRegex) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"root ::= [a-c]+ \"-\" [0-9]{2,4}", "[a-c]+-[0-9]{2,4}"},
      {"root ::= (\"ab\" | \"a\")* \"b\"?", "(ab|a)*b?"},
      {"root ::= x{0,3} y\nx ::= \"a\" | \"bc\"\ny ::= [^a-c]?", "(a|bc){0,3}[^a-c]?"},
      {"root ::= ( [0-9] | \"-\" [a-b]+ )+ ( \".\" | \"\" ) ", "([0-9]|-[a-b]+)+(\\.|)"},
      {"root ::= \"a\"{2} (\"b\" | \"c\"){1,} \"d\"{0,2}", "a{2}(b|c){1,}d{0,2}"},
      {"root ::= w (\" \" w)*\nw ::= [a-d]+", "[a-d]+( [a-d]+)*"},
  };
  const std::string alphabet = "abcd-0123. ";
  std::mt19937 rng(7);
  for (const auto& [grammar, regex] : pairs) {
    const auto g = compile(grammar);
    const std::regex re(regex, std::regex::ECMAScript);
    std::vector<std::string> matched;
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      const int n = std::uniform_int_distribution<int>(0, 9)(rng);
      for (int k = 0; k < n; ++k) s += alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
      const bool want = std::regex_match(s, re);
      ASSERT_EQ(accepts(g, s), want) << grammar << " on '" << s << "'";
      if (want) matched.push_back(s);
    }
    // Random walks end in matches.
    for (int i = 0; i < 200; ++i) {
      const std::string s = random_walk(g, rng, 12, /*ascii=*/true);  // std::regex reads bytes
      ASSERT_TRUE(std::regex_match(s, re)) << grammar << " walked to '" << s << "'";
      matched.push_back(s);
    }
    // Every prefix of a match is accepted (no byte a valid continuation needs is refused).
    for (const std::string& s : matched) {
      GbnfMatcher m(g);
      for (char c : s) ASSERT_TRUE(m.feed(static_cast<uint8_t>(c))) << grammar << " on '" << s << "'";
    }
  }
}

// nlohmann's verdict on `s`, except for numbers past double's range, which it refuses and JSON's
// grammar (this test's too) does not: nullopt for those.
std::optional<bool> json_accepts(const std::string& s) {
  if (nlohmann::json::accept(s)) return true;
  try {
    const auto parsed = nlohmann::json::parse(s);
    (void)parsed;
  } catch (const nlohmann::json::out_of_range&) {
    return std::nullopt;
  } catch (const nlohmann::json::exception&) {
  }
  return false;
}

// The JSON grammar accepts exactly what nlohmann::json::accept accepts: on random mutations of
// JSON documents (bytes inserted, deleted, replaced) and on random walks through the acceptor.
TEST(GbnfMatcherTest, JsonGrammarAgreesWithNlohmann) {
  const auto g = compile(kJsonGrammar);
  const std::vector<std::string> docs = {
      R"({"a": [1, -2.5e+3, true, null], "b": {"c": "x\n\u00e9\"", "d": []}})",
      R"([0, 1e5, -0.25, "", {}, [[]], "é€😀"])",
      " \"plain\" ",
      "-12",
      "{\n  \"k\": [\n    false\n  ]\n}\n",
  };
  const std::string noise = "{}[],:\"\\ 0123456789-+.eEtrufalsn\n\t\x01\xc3\xa9\x80u";
  std::mt19937 rng(3);
  int n_valid = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string s = docs[static_cast<size_t>(i) % docs.size()];
    const int edits = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int k = 0; k < edits && !s.empty(); ++k) {
      const size_t at = std::uniform_int_distribution<size_t>(0, s.size() - 1)(rng);
      const char c = noise[std::uniform_int_distribution<size_t>(0, noise.size() - 1)(rng)];
      switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
        case 0: s.insert(at, 1, c); break;
        case 1: s.erase(at, 1); break;
        default: s[at] = c; break;
      }
    }
    const std::optional<bool> want = json_accepts(s);
    if (!want) continue;
    n_valid += *want;
    ASSERT_EQ(accepts(g, s), *want) << "'" << s << "'";
  }
  EXPECT_GT(n_valid, 500);
  for (int i = 0; i < 150; ++i) {
    const std::string s = random_walk(g, rng, 40);
    ASSERT_NE(json_accepts(s), std::optional<bool>(false)) << "walked to '" << s << "'";
  }
}

// Closing bytes: short completions that the matcher accepts as complete.
TEST(GbnfMatcherTest, ClosingBytes) {
  const auto g = compile(kJsonGrammar);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "0"},
      {"{", "}"},
      {"{\"a", "\":0}"},
      {"[1, {\"b\": [tr", "ue]}]"},
      {"\"\\u00", "00\""},
      {"\"\xE2\x82", "\x80\""},  // a cut character: the smallest it can still be
      {"-", "0"},
      {"1.", "0"},
  };
  for (const auto& [prefix, want] : cases) {
    GbnfMatcher m(g);
    ASSERT_TRUE(m.feed(prefix)) << prefix;
    EXPECT_EQ(m.closing_bytes(), std::optional<std::string>(want)) << prefix;
  }
  GbnfMatcher done(g);
  ASSERT_TRUE(done.feed("[1]"));
  EXPECT_EQ(done.closing_bytes(), std::optional<std::string>(""));
  EXPECT_FALSE(done.closed());  // whitespace may follow
  const auto fixed = compile("root ::= \"ab\" | \"abc\"");
  GbnfMatcher f(fixed);
  ASSERT_TRUE(f.feed("abc"));
  EXPECT_TRUE(f.closed());
  // A completion longer than the bound: none.
  const auto long_one = compile("root ::= ((\"a\"{100}){100}){100}");
  EXPECT_FALSE(GbnfMatcher(long_one).closing_bytes().has_value());
  EXPECT_EQ(GbnfMatcher(long_one).closing_bytes(1'000'000)->size(), 1'000'000u);
}

// Hostile grammars: ambiguity, exponential expansion, depth and size stay within the bounds
// (refused at compile time or byte by byte) and within a time limit.
TEST(GbnfMatcherTest, HostileGrammarsAreBounded) {
  const auto t0 = std::chrono::steady_clock::now();
  // Ambiguous: every split of a run of a's is a parse; stacks are merged or capped.
  struct Hostile {
    const char* text;
    uint8_t byte;  // fed 300 times, then 'a' 300 times
  };
  for (const Hostile& h : {Hostile{"root ::= (\"a\" | \"aa\" | \"aaa\")* \"b\"", 'a'},
                           Hostile{"root ::= x*\nx ::= \"a\" | \"a\" x | x2\nx2 ::= \"a\" \"a\"?", 'a'},
                           Hostile{"root ::= (\"a\"{0,30}){0,30} \"b\"", 'a'},
                           Hostile{"root ::= ((((\"a\"{100}){100}){100}){100})", 'a'},
                           Hostile{"root ::= \"(\" root \")\" | \"x\"", '('}}) {
    auto g = GbnfGrammar::compile(h.text);
    if (!g.is_ok()) {
      EXPECT_NE(g.status().message().find("too ambiguous"), std::string::npos) << g.status().message();
      continue;
    }
    GbnfMatcher m(*g);
    for (int i = 0; i < 300; ++i) (void)m.feed(h.byte);
    for (int i = 0; i < 300; ++i) (void)m.feed(uint8_t{'a'});
    EXPECT_LE(m.n_stacks(), GbnfMatcher::kMaxStacks);
    (void)m.closing_bytes();
  }
  // Deep nesting stops at the depth bound: '(' is refused from there on, and the text can still
  // be closed.
  {
    GbnfMatcher m(compile("root ::= \"(\" root \")\" | \"x\""));
    int opened = 0;
    for (int i = 0; i < 300; ++i) opened += m.feed(uint8_t{'('});
    EXPECT_GT(opened, 50);
    EXPECT_LT(opened, 300);
    const auto close = m.closing_bytes();
    ASSERT_TRUE(close.has_value());
    EXPECT_EQ(*close, "x" + std::string(static_cast<size_t>(opened), ')'));
  }
  // Expansion that doubles at every level: refused at compile time (the start alone passes the
  // step bound) or byte by byte, never unbounded.
  std::string doubling = "root ::= r0\n";
  for (int k = 0; k < 30; ++k) doubling += fmt::format("r{} ::= r{} r{} | \"x\" | \"\"\n", k, k + 1, k + 1);
  doubling += "r30 ::= \"y\" | \"\"\n";
  auto g = GbnfGrammar::compile(doubling);
  if (g.is_ok()) {
    GbnfMatcher m(*g);
    for (int i = 0; i < 100; ++i) (void)m.feed(uint8_t{'x'});
  } else {
    EXPECT_NE(g.status().message().find("too ambiguous"), std::string::npos) << g.status().message();
  }
  // Many rules, long chains: within the rule and element limits or refused by them.
  std::string chain = "root ::= c0\n";
  for (int k = 0; k < 2000; ++k) chain += fmt::format("c{} ::= \"a\" c{} | \"b\"\n", k, k + 1);
  chain += "c2000 ::= \"z\"\n";
  g = GbnfGrammar::compile(chain);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  GbnfMatcher m(*g);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(m.feed(uint8_t{'a'}));  // tail calls: constant depth
  EXPECT_TRUE(m.feed(uint8_t{'z'}));
  EXPECT_TRUE(m.complete());
  std::string wide = "root ::= \"a\"\n";
  for (int k = 0; k < 4200; ++k) wide += fmt::format("r{}::=\"a\"\n", k);
  auto too_many = GbnfGrammar::compile(wide);
  ASSERT_FALSE(too_many.is_ok());
  EXPECT_NE(too_many.status().message().find("more than 4096 rules"), std::string::npos)
      << too_many.status().message();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 20.0);
}

// The mask over a grammar equals brute force (each token's bytes fed to a copy of the matcher;
// end tokens once complete) at every step of random generations.
TEST(GbnfTokenConstraintTest, MaskEqualsBruteForce) {
  std::mt19937 rng(5);
  const std::vector<std::string> atoms = {"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "\\", "a", "b",
                                          "1", "0", "-", ".", "e", "true", "null", "\xc3", "\xa9", "x",
                                          "\xe2\x82\xac", "ab", "("};
  std::vector<std::string> pieces = {""};
  for (const auto& a : atoms) pieces.push_back(a);
  for (int i = 0; i < 300; ++i) {
    std::string p;
    const int n = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int k = 0; k < n; ++k) p += atoms[std::uniform_int_distribution<size_t>(0, atoms.size() - 1)(rng)];
    pieces.push_back(p);
  }
  auto vocab = std::make_shared<TokenVocabulary>(pieces, std::vector<int32_t>{0});
  for (const char* text : {kJsonGrammar, "root ::= ([a-b]+ | \"€\" | \"é\")* \"x\"{1,3}",
                           "root ::= \"(\" root \")\" root | \"\""}) {
    const auto g = compile(text);
    StructuredOutput spec;
    spec.grammar = g;
    spec.vocab = vocab;
    for (int run = 0; run < 12; ++run) {
      TokenConstraint c(spec);
      GbnfMatcher shadow(g);
      for (int step = 0; step < 40; ++step) {
        std::vector<float> logits(pieces.size(), 0.0f);
        const int64_t n = c.mask(logits);
        int64_t expect = 0;
        for (size_t id = 0; id < pieces.size(); ++id) {
          bool ok;
          if (pieces[id].empty()) {
            ok = shadow.complete();
          } else {
            GbnfMatcher probe = shadow;
            ok = probe.feed(pieces[id]);
          }
          expect += ok;
          ASSERT_EQ(std::isfinite(logits[id]), ok) << "token '" << pieces[id] << "' at step " << step;
        }
        if (expect > 0) {
          ASSERT_EQ(n, expect);
        }
        std::vector<int32_t> allowed;
        for (size_t id = 1; id < pieces.size(); ++id) {
          if (std::isfinite(logits[id])) allowed.push_back(static_cast<int32_t>(id));
        }
        if (allowed.empty()) break;
        const int32_t t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        ASSERT_TRUE(c.accept(t));
        ASSERT_TRUE(shadow.feed(pieces[static_cast<size_t>(t)]));
        EXPECT_EQ(c.complete(), shadow.complete());
      }
    }
  }
}

// Within a token budget a grammar's text is closed in time, as a schema's is.
TEST(GbnfTokenConstraintTest, ClosesWithinTheTokenBudget) {
  const std::vector<std::string> pieces = {"", "[", "]", "1", ",", " ", "12", "[1"};
  auto vocab = std::make_shared<TokenVocabulary>(pieces, std::vector<int32_t>{0});
  StructuredOutput spec;
  spec.grammar = compile("root ::= \"[\" ( [0-9]+ ( \",\" \" \"? [0-9]+ )* )? \"]\"");
  spec.vocab = vocab;
  for (int64_t max_tokens : {2, 3, 7, 30}) {
    TokenConstraint c(spec);
    std::string out;
    for (int64_t used = 0; used < max_tokens && !c.closed(); ++used) {
      std::vector<float> l(pieces.size(), 0.0f);
      l[6] = 5.0f;  // "12" keeps the list going whenever allowed
      l[4] = 4.0f;
      const int64_t budget = max_tokens - used;
      ASSERT_GT(c.mask(l, budget), 0);
      const auto best = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
      const int32_t t = c.keep_completable(best, budget);
      ASSERT_TRUE(c.accept(t)) << pieces[static_cast<size_t>(t)];
      out += pieces[static_cast<size_t>(t)];
    }
    EXPECT_TRUE(c.closed()) << max_tokens << ": " << out;
    EXPECT_TRUE(accepts(spec.grammar, out)) << out;
  }
}

// Generation on a trained model (stories260K), greedy and sampled: every output is a complete
// text of its grammar, checked by a fresh matcher and, where the grammar is a regex, std::regex.
TEST(GbnfTokenConstraintTest, GrammarsOnATrainedModel) {
  TS_SKIP_WITHOUT_SHARED(model_path, "models/stories260K.bin");
  TS_SKIP_WITHOUT_SHARED(tok_path, "models/stories260K-tok512.bin");
  auto loaded = model::load_model(model_path.string());
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  std::shared_ptr<model::Model> m(std::move(loaded).value());
  auto tok = model::load_llama2c_tokenizer(tok_path.string(), static_cast<int32_t>(m->config().n_vocab));
  ASSERT_TRUE(tok.is_ok());
  std::shared_ptr<const model::Tokenizer> tokenizer(std::move(tok).value());
  const auto vocab = make_token_vocabulary(*tokenizer);
  EngineOptions o;
  o.n_threads = 1;
  o.ctx_size = 256;
  o.max_running = 16;
  auto e = Engine::create(m, tokenizer, o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  struct Case {
    std::string grammar, regex;  // regex empty: JSON (nlohmann checks it)
  };
  const std::vector<Case> cases = {
      {"root ::= sentence \".\"\nsentence ::= [A-Z] [a-z]* (\" \" [a-z]+){2,6}", "[A-Z][a-z]*( [a-z]+){2,6}\\."},
      {"root ::= (\"yes\" | \"no\") \", \" color\ncolor ::= \"red\" | \"green\" | \"blue\"", "(yes|no), (red|green|blue)"},
      {"root ::= \"The \" (\"cat\" | \"dog\") \" \" [a-z ]{0,20} \"!\"", "The (cat|dog) [a-z ]{0,20}!"},
      {kJsonGrammar, ""},
      {"root ::= \"{\\\"name\\\": \\\"\" [A-Za-z ]{1,12} \"\\\", \\\"age\\\": \" [1-9] [0-9]? \"}\"", ""},
  };
  struct Job {
    size_t c;
    float temperature;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  for (size_t c = 0; c < cases.size(); ++c) {
    for (uint64_t seed = 0; seed <= 3; ++seed) jobs.push_back({c, seed == 0 ? 0.0f : 1.0f, seed});
  }
  std::vector<std::string> text(jobs.size());
  std::vector<FinishReason> finish(jobs.size(), FinishReason::kError);
  std::vector<std::shared_ptr<const GbnfGrammar>> grammars;
  for (const Case& c : cases) grammars.push_back(compile(c.grammar));
  for (size_t j = 0; j < jobs.size(); ++j) {
    auto spec = std::make_shared<StructuredOutput>();
    spec->grammar = grammars[jobs[j].c];
    spec->vocab = vocab;
    Request r;
    r.prompt = tokenizer->encode("Once upon a time", true, false);
    r.sampling.temperature = jobs[j].temperature;
    r.sampling.seed = jobs[j].seed;
    r.max_tokens = 64;
    r.structured = spec;
    ASSERT_TRUE((*e)->submit(r, [&text, &finish, j](Event&& ev) {
                     if (auto* t = std::get_if<TokenEvent>(&ev.body)) {
                       text[j] += t->text;
                     } else {
                       const auto& f = std::get<FinishEvent>(ev.body);
                       text[j] += f.text;
                       finish[j] = f.reason;
                     }
                   }).is_ok());
  }
  while ((*e)->step()) {
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Case& c = cases[jobs[j].c];
    EXPECT_NE(finish[j], FinishReason::kError) << text[j];
    EXPECT_TRUE(accepts(grammars[jobs[j].c], text[j])) << c.grammar << " <- " << text[j];
    if (c.regex.empty()) {
      EXPECT_TRUE(nlohmann::json::accept(text[j])) << text[j];
    } else {
      EXPECT_TRUE(std::regex_match(text[j], std::regex(c.regex, std::regex::ECMAScript)))
          << c.regex << " <- " << text[j];
    }
  }
}

}  // namespace gbnf_test
}  // namespace tessera::engine
