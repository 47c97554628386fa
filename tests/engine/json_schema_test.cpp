// The JSON Schema core structured output enforces (JsonSchema + JsonMatcher), on a corpus of our
// own (tests/engine/data/json_schema_corpus.json: every enforced keyword, with valid and invalid
// instances whose labels Debian's python3-jsonschema confirms): the matcher accepts exactly the
// valid instances; random byte walks (every byte the matcher allows, at random) and decoding on
// a trained model (greedy and sampled) give outputs that the independent validator accepts, with
// no dead end; what is not enforced is refused by name.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/engine/engine.h"
#include "tessera/engine/json_matcher.h"
#include "tessera/engine/json_schema.h"
#include "tessera/engine/regex_dfa.h"
#include "tessera/engine/token_constraint.h"
#include "tessera/model/architecture.h"
#include "tessera/model/tokenizer/llama2c_tokenizer.h"
#include "test_util.h"

namespace tessera::engine {
namespace json_schema_test {

using nlohmann::json;

const std::string kSource = TESSERA_SOURCE_DIR;
const std::string kCorpus = kSource + "/tests/engine/data/json_schema_corpus.json";

json corpus() {
  std::ifstream in(kCorpus);
  return json::parse(in);
}

std::shared_ptr<const JsonSchema> compile_ok(const json& schema) {
  auto s = JsonSchema::compile(schema);
  EXPECT_TRUE(s.is_ok()) << schema.dump() << ": " << s.status().to_string();
  return s.is_ok() ? *s : JsonSchema::any_object();
}

bool accepts(const std::shared_ptr<const JsonSchema>& s, const std::string& text) {
  JsonMatcher m(s);
  return m.feed(text) && m.complete();
}

// One random walk: bytes the matcher allows, chosen at random (structure and short words
// preferred), then its closing bytes. Fails the test on a dead end or a failed closing.
std::string walk(const std::shared_ptr<const JsonSchema>& s, std::mt19937& rng, int steps) {
  static const std::string kAlphabet = "{}[]\":,-.0123456789eE+ \ntrufalsnidxokvu\\\xc3\xa9";
  JsonMatcher m(s);
  std::string out;
  for (int step = 0; step < steps && !m.closed(); ++step) {
    std::vector<uint8_t> ok;
    for (char c : kAlphabet) {
      JsonMatcher probe(s);
      probe.assign_state(m);
      if (probe.feed(static_cast<uint8_t>(c))) ok.push_back(static_cast<uint8_t>(c));
    }
    if (ok.empty()) {
      for (int b = 0; b < 256; ++b) {
        JsonMatcher probe(s);
        probe.assign_state(m);
        if (probe.feed(static_cast<uint8_t>(b))) ok.push_back(static_cast<uint8_t>(b));
      }
    }
    EXPECT_TRUE(!ok.empty() || m.complete()) << "dead end after: " << out;
    if (ok.empty()) break;
    const uint8_t b = ok[std::uniform_int_distribution<size_t>(0, ok.size() - 1)(rng)];
    EXPECT_TRUE(m.feed(b));
    out.push_back(static_cast<char>(b));
  }
  const std::optional<std::string> close = m.closing_bytes();
  EXPECT_TRUE(close.has_value()) << "no closing bytes after: " << out;
  if (close) out += *close;
  return out;
}

// Runs the independent validator over `records` ({"schema": i, "text": ..., "how": ...});
// returns its output, or skips when python3-jsonschema is missing.
struct Validation {
  int rc = -1;
  std::string output;
};
Validation validate(const std::vector<json>& records, const std::string& name) {
  const std::string path = std::string(TESSERA_BINARY_DIR) + "/" + name + ".jsonl";
  {
    std::ofstream out(path);
    for (const json& r : records) out << r.dump() << "\n";
  }
  const std::string cmd = "/usr/bin/python3 " + kSource + "/tests/engine/validate_json_schema.py " +
                          path + " " + kCorpus + " 2>&1";
  Validation v;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return v;
  char buf[4096];
  while (fgets(buf, sizeof buf, p) != nullptr) v.output += buf;
  const int status = pclose(p);
  v.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return v;
}

TEST(JsonSchemaCorpus, AcceptsExactlyTheValidInstances) {
  const json c = corpus();
  ASSERT_GE(c.size(), 30u);
  for (const json& e : c) {
    const auto s = compile_ok(e["schema"]);
    for (const json& v : e["valid"]) {
      EXPECT_TRUE(accepts(s, v.dump())) << e["name"] << ": " << v.dump();
      // Indented too, except enum/const objects and arrays: those are matched as their compact
      // text (what the matcher writes).
      if (!e.value("compact_only", false)) {
        EXPECT_TRUE(accepts(s, v.dump(1))) << e["name"] << ": " << v.dump(1);
      }
    }
    for (const json& v : e["invalid"]) {
      EXPECT_FALSE(accepts(s, v.dump())) << e["name"] << ": " << v.dump();
    }
  }
}

TEST(JsonSchemaCorpus, RandomWalksValidateWithAnIndependentValidator) {
  const json c = corpus();
  std::mt19937 rng(45);
  std::vector<json> records;
  for (size_t i = 0; i < c.size(); ++i) {
    const auto s = compile_ok(c[i]["schema"]);
    // The shortest completion from nothing (what a budget of zero closes to), then walks.
    JsonMatcher empty(s);
    const auto shortest = empty.closing_bytes();
    ASSERT_TRUE(shortest.has_value()) << c[i]["name"];
    records.push_back({{"schema", i}, {"text", *shortest}, {"how", "closing from empty"}});
    for (int w = 0; w < 40; ++w) {
      const std::string out = walk(s, rng, w % 4 == 0 ? 8 : 160);
      ASSERT_TRUE(accepts(s, out)) << c[i]["name"] << ": " << out;
      records.push_back({{"schema", i}, {"text", out}, {"how", "walk " + std::to_string(w)}});
    }
  }
  const Validation v = validate(records, "json_schema_walks");
  if (v.rc == 77) GTEST_SKIP() << v.output;
  EXPECT_EQ(v.rc, 0) << v.output;
  std::printf("%s", v.output.c_str());
}

// Decoding on a trained model (stories260K) under each corpus schema, greedy and sampled, through
// the engine: every output finishes and the independent validator accepts it.
TEST(JsonSchemaCorpus, GreedyAndSampledDecodingOnATrainedModelValidates) {
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
  o.ctx_size = 512;
  o.max_running = 32;
  auto e = Engine::create(m, tokenizer, o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  const json c = corpus();
  std::vector<json> records;
  std::vector<std::string> text;
  std::vector<FinishReason> finish;
  struct Job {
    size_t schema;
    float temperature;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < c.size(); ++i) {
    jobs.push_back({i, 0.0f, 0});
    for (uint64_t seed = 1; seed <= 3; ++seed) jobs.push_back({i, 1.0f, seed});
  }
  text.assign(jobs.size(), "");
  finish.assign(jobs.size(), FinishReason::kError);
  for (size_t j = 0; j < jobs.size(); ++j) {
    auto spec = std::make_shared<StructuredOutput>();
    spec->schema = compile_ok(c[jobs[j].schema]["schema"]);
    spec->vocab = vocab;
    Request r;
    r.prompt = tokenizer->encode("Once upon a time", true, false);
    r.sampling.temperature = jobs[j].temperature;
    r.sampling.seed = jobs[j].seed;
    r.max_tokens = 200;
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
    EXPECT_EQ(finish[j], FinishReason::kStop) << c[jobs[j].schema]["name"] << ": " << text[j];
    records.push_back({{"schema", jobs[j].schema},
                       {"text", text[j]},
                       {"how", jobs[j].temperature == 0 ? "greedy" : "sampled seed " + std::to_string(jobs[j].seed)}});
  }
  const Validation v = validate(records, "json_schema_decoding");
  if (v.rc == 77) GTEST_SKIP() << v.output;
  EXPECT_EQ(v.rc, 0) << v.output;
  std::printf("%s", v.output.c_str());
}

// Not JSON: vLLM's regex and choice structured outputs through the same matcher, greedy and
// sampled on a trained model; every output matches (std::regex, ECMAScript, an independent
// engine) or is one of the choices.
TEST(RawTextConstraint, RegexAndChoiceOnATrainedModel) {
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
  const std::vector<std::string> regexes = {"[a-z]+ [0-9]{2,4}", "(yes|no), (red|green|blue)\\.",
                                            "\\d{3}-\\d{4}", "The (cat|dog) [a-z ]{0,20}!",
                                            "[A-Z][a-z]*( [a-z]+){2,5}\\."};
  const std::vector<std::string> choices = {"Once", "upon a time", "the end", "a.b*"};
  struct Job {
    std::shared_ptr<const JsonSchema> schema;
    std::string regex;  // empty: the choices
    float temperature;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  for (const std::string& r : regexes) {
    auto dfa = RegexDfa::compile(r, RegexDfa::Match::kFull);
    ASSERT_TRUE(dfa.is_ok()) << r << ": " << dfa.status().to_string();
    const auto schema = JsonSchema::raw_text(*dfa);
    for (uint64_t seed = 0; seed <= 3; ++seed) jobs.push_back({schema, r, seed == 0 ? 0.0f : 1.0f, seed});
  }
  auto choice = JsonSchema::choice(choices);
  ASSERT_TRUE(choice.is_ok()) << choice.status().to_string();
  for (uint64_t seed = 0; seed <= 3; ++seed) jobs.push_back({*choice, "", seed == 0 ? 0.0f : 1.0f, seed});
  std::vector<std::string> text(jobs.size());
  std::vector<FinishReason> finish(jobs.size(), FinishReason::kError);
  for (size_t j = 0; j < jobs.size(); ++j) {
    auto spec = std::make_shared<StructuredOutput>();
    spec->schema = jobs[j].schema;
    spec->vocab = vocab;
    Request r;
    r.prompt = tokenizer->encode("Once upon a time", true, false);
    r.sampling.temperature = jobs[j].temperature;
    r.sampling.seed = jobs[j].seed;
    r.max_tokens = 48;
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
    EXPECT_NE(finish[j], FinishReason::kError) << text[j];
    if (jobs[j].regex.empty()) {
      EXPECT_NE(std::find(choices.begin(), choices.end(), text[j]), choices.end()) << text[j];
    } else {
      EXPECT_TRUE(std::regex_match(text[j], std::regex(jobs[j].regex, std::regex::ECMAScript)))
          << jobs[j].regex << " <- " << text[j];
    }
  }
}

// What is not enforced is refused with kUnsupported naming it; schemas no value satisfies are
// invalid arguments.
TEST(JsonSchemaCompile, RefusesWhatItDoesNotEnforceByName) {
  const std::vector<std::pair<const char*, const char*>> unsupported = {
      {R"({"type": "string", "pattern": "(?=a)b"})", "lookaround"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "backreferences"},
      {R"({"type": "string", "pattern": "^a|b$"})", "anchors"},
      {R"({"type": "string", "pattern": "a\\bc"})", "boundaries"},
      {R"({"type": "string", "pattern": "a{1000}"})", "repeat"},
      {R"({"type": "string", "pattern": "^a", "minLength": 5, "maxLength": 5000})", "minLength"},
      {R"({"type": "object", "patternProperties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}}})",
       "patternProperties"},
      // Keys "xy..." match both patterns, whose schemas admit no value together.
      {R"({"patternProperties": {"^x": {"type": "string"}, "y": {"type": "integer"}}})",
       "patternProperties"},
      {R"({"allOf": [{"patternProperties": {"^x": {}}}, {"additionalProperties": false}]})",
       "patternProperties"},
      {R"({"type": "array", "items": {"type": "string"}, "uniqueItems": true})", "uniqueItems"},
      {R"({"type": "array", "items": {"enum": [1, 1.0]}, "uniqueItems": true})", "equal"},
      {R"({"type": "array", "prefixItems": [{"const": 1}], "items": {"enum": [2]}, "uniqueItems": true})",
       "uniqueItems"},
      {R"({"not": {"type": "string"}})", "not"},
      {R"({"if": {}, "then": {}})", "if"},
      {R"({"type": "array", "uniqueItems": true})", "uniqueItems"},
      {R"({"type": "array", "contains": {"type": "integer"}})", "contains"},
      {R"({"propertyNames": {"maxLength": 3}})", "propertyNames"},
      {R"({"type": "number", "multipleOf": 0.01})", "multipleOf"},
      {R"({"anyOf": [{"type": "object", "required": ["a"]}, {"type": "object"}]})", "objects"},
      {R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})", "numbers"},
      {R"({"$ref": "https://example.com/s.json"})", "$ref"},
      {R"({"$ref": "#anchor"})", "anchors"},
      {R"({"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "b"}]})", "pattern"},
  };
  for (const auto& [text, word] : unsupported) {
    auto r = JsonSchema::compile(json::parse(text));
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported) << text << ": " << r.status().to_string();
    EXPECT_NE(r.status().message().find(word), std::string::npos) << text << ": " << r.status().message();
  }
  for (const char* text : {
           R"({"$ref": "#/$defs/missing"})", "false", R"({"type": "text"})",
           R"({"required": ["x"], "additionalProperties": false})",
           R"({"type": "integer", "minimum": 5, "maximum": 4})",
           R"({"$defs": {"A": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
                "required": ["a"]}}, "$ref": "#/$defs/A"})",
           R"({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"})",
           R"({"enum": []})", R"({"minItems": 3, "maxItems": 2})", R"({"maxItems": 1.5})"}) {
    auto r = JsonSchema::compile(json::parse(text));
    EXPECT_FALSE(r.is_ok()) << text;
  }
}

// A hostile schema whose allOf/$ref merges double at every level is refused quickly.
TEST(JsonSchemaCompile, ExponentialMergesAreBounded) {
  json defs = json::object();
  defs["L0"] = {{"type", "object"}, {"properties", {{"x", {{"type", "integer"}}}}}};
  for (int i = 1; i <= 15; ++i) {  // 2^15 merges, within the nesting bound
    const std::string prev = "#/$defs/L" + std::to_string(i - 1);
    defs["L" + std::to_string(i)] = {{"allOf", json::array({{{"$ref", prev}}, {{"$ref", prev}}})}};
  }
  const json schema = {{"$defs", defs}, {"$ref", "#/$defs/L15"}};
  const auto t0 = std::chrono::steady_clock::now();
  auto r = JsonSchema::compile(schema);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("too complex"), std::string::npos) << r.status().message();
  EXPECT_LT(s, 5.0);
}

// This thread's CPU time in seconds: what a compile costs, whatever else the machine runs.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Patterns whose automata explode (the classic (.*a){n}) are refused by name in well under a
// second of CPU (three under the sanitizers); every state left can reach acceptance. CPU time, not
// wall time: under ASan with a build running beside it "[^x]{100}x.{30}$" took 1.11 s of wall time.
TEST(JsonSchemaCompile, HostilePatternsAreBounded) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr double kBound = 3.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  constexpr double kBound = 3.0;
#else
  constexpr double kBound = 1.0;
#endif
#else
  constexpr double kBound = 1.0;
#endif
  for (const char* p : {"(.*a){20}", "(a|aa|aaa)*b(.*c){12}", "([a-z]{1,100}){1,100}",
                        "(((a{1,100}){1,100}){1,100})", "[^x]{100}x.{30}$"}) {
    const double t0 = thread_cpu_seconds();
    auto r = RegexDfa::compile(p);
    const double s = thread_cpu_seconds() - t0;
    EXPECT_LT(s, kBound) << p;
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported) << p << ": " << r.status().to_string();
      continue;
    }
    for (uint16_t st = 0; st < (*r)->size(); ++st) EXPECT_GE((*r)->distance(st), 0) << p;
  }
  // The largest automata with the longest length tables: bounded too (built or refused fast).
  for (const char* p : {"^(a|b)*a(a|b){10}$", "^(\u00e9|a)*a(\u00e9|\u20ac){9}$", "^[^x]*x[^y]{100}$",
                        ".{1,20}x.{1,20}"}) {
    for (const auto& [lo, hi] : std::vector<std::pair<int, int>>{{0, 1024}, {1024, -1}, {500, 1000}}) {
      json schema = {{"type", "string"}, {"pattern", p}, {"minLength", lo}};
      if (hi >= 0) schema["maxLength"] = hi;
      const auto t0 = std::chrono::steady_clock::now();
      auto r = JsonSchema::compile(schema);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(s, 3.0) << schema.dump();
      if (!r.is_ok()) {
        EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported) << r.status().to_string();
      }
    }
  }
}

// A recursive schema nests only as deep as the matcher's stack allows, and always closes.
TEST(JsonSchemaMatcher, RecursionStopsOpeningAtTheDepthLimitAndCloses) {
  const auto s = compile_ok(json::parse(R"({"$defs": {"T": {"type": "object",
      "properties": {"c": {"type": "array", "items": {"$ref": "#/$defs/T"}}}}}, "$ref": "#/$defs/T"})"));
  JsonMatcher m(s);
  std::string out;
  int opened = 0;
  while (m.feed(std::string_view("{\"c\":["))) {
    out += "{\"c\":[";
    ++opened;
  }
  EXPECT_GE(opened, 6);
  EXPECT_LE(opened, JsonMatcher::kMaxDepth);
  const auto close = m.closing_bytes();
  ASSERT_TRUE(close.has_value()) << out;
  EXPECT_TRUE(json::accept(out + *close)) << out + *close;
  EXPECT_TRUE(accepts(s, out + *close));
}

// Bounded numbers: every digit keeps some number within the bounds reachable, so the closing
// bytes always exist, and the digits that cannot lead there are refused at once.
TEST(JsonSchemaMatcher, BoundedNumbersRefuseDigitsThatCannotFit) {
  const auto s = compile_ok(json::parse(R"({"type": "integer", "minimum": 15, "maximum": 15})"));
  JsonMatcher m(s);
  EXPECT_FALSE(m.feed(static_cast<uint8_t>('2')));
  EXPECT_FALSE(m.feed(static_cast<uint8_t>('-')));
  EXPECT_TRUE(m.feed(static_cast<uint8_t>('1')));
  EXPECT_FALSE(m.complete());
  EXPECT_EQ(m.closing_bytes().value_or("?"), "5");
  const auto f = compile_ok(json::parse(R"({"type": "number", "exclusiveMinimum": 0.25, "maximum": 0.5})"));
  JsonMatcher g(f);
  EXPECT_FALSE(g.feed(static_cast<uint8_t>('1')));
  EXPECT_TRUE(g.feed(std::string_view("0.2")));
  EXPECT_FALSE(g.complete());
  EXPECT_FALSE(g.feed(std::string_view("4")));
  EXPECT_TRUE(g.feed(std::string_view("6")));
  EXPECT_TRUE(g.complete());
  EXPECT_FALSE(accepts(f, "0.25"));
  EXPECT_TRUE(accepts(f, "0.5"));
  EXPECT_FALSE(accepts(f, "0.5000000000001"));
  EXPECT_FALSE(accepts(f, "2.5e-1"));  // no exponents where bounds apply
}

}  // namespace json_schema_test
}  // namespace tessera::engine

namespace tessera::engine::json_schema_test {
namespace {

// A pattern with minLength/maxLength accepts exactly the strings that match (std::regex, an
// independent engine) and have an allowed number of code points; every prefix it takes can be
// closed (closing_bytes), so no byte leads into a dead end. All strings over {a, b, é} up to 6
// characters, for patterns with length gaps, searches and UTF-8 (escapes: the corpus tests).
TEST(PatternLengths, AcceptsExactlyTheMatchingStringsOfAllowedLengths) {
  const std::vector<std::string> patterns = {"^(ab|\xc3\xa9)*$", "^a+b?$", "b", "^[ab]*\xc3\xa9[ab]*$",
                                             "^(aa|bbb)+$", "a$"};
  const std::vector<std::pair<int, int>> bounds = {{0, 3}, {2, 4}, {3, -1}, {4, 4}, {1, 6}, {5, 2000}};
  const std::vector<std::string> chars = {"a", "b", "\xc3\xa9"};
  std::vector<std::vector<int>> strings = {{}};
  for (size_t i = 0; i < strings.size(); ++i) {
    if (strings[i].size() == 6) continue;
    for (int c = 0; c < 3; ++c) {
      auto s = strings[i];
      s.push_back(c);
      strings.push_back(std::move(s));
    }
  }
  int checked = 0;
  for (const auto& pattern : patterns) {
    const std::regex re(pattern, std::regex::ECMAScript);
    for (const auto& [lo, hi] : bounds) {
      json schema = {{"type", "string"}, {"pattern", pattern}, {"minLength", lo}};
      if (hi >= 0) schema["maxLength"] = hi;
      auto compiled = JsonSchema::compile(schema);
      if (lo == 5 && hi == 2000) {  // a minLength with a maxLength past the table: refused
        ASSERT_FALSE(compiled.is_ok()) << schema.dump();
        continue;
      }
      ASSERT_TRUE(compiled.is_ok()) << schema.dump() << ": " << compiled.status().to_string();
      const std::shared_ptr<const JsonSchema> s = std::move(compiled).value();
      for (const auto& str : strings) {
        std::string text;
        for (int c : str) text += chars[static_cast<size_t>(c)];
        const auto n = static_cast<int>(str.size());
        const bool want = std::regex_search(text, re) && n >= lo && (hi < 0 || n <= hi);
        EXPECT_EQ(accepts(s, "\"" + text + "\""), want) << schema.dump() << " " << text;
        // Every prefix the matcher takes closes.
        JsonMatcher m(s);
        bool alive = m.feed('"');
        for (size_t k = 0; alive && k < text.size(); ++k) {
          alive = m.feed(static_cast<uint8_t>(text[k]));
          if (alive) {
            const auto close = m.closing_bytes();
            ASSERT_TRUE(close.has_value()) << schema.dump() << " after " << text.substr(0, k + 1);
            JsonMatcher t(s);
            t.assign_state(m);
            ASSERT_TRUE(t.feed(*close) && t.complete()) << schema.dump() << " " << *close;
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20000);
}

}  // namespace
}  // namespace tessera::engine::json_schema_test
