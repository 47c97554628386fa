// Structured output's per-step cost: TokenConstraint::mask (with a token budget) over a real
// vocabulary, at three points of a JSON document (a structural position, inside a string, inside
// a number), the fastest completion alone, big schemas and patterns, and GBNF grammars (below). The
// vocabulary comes from a GGUF (TESSERA_VOCAB, default ../shared/tokenizers/ggml-vocab-llama-spm.gguf);
// without it the benchmarks are skipped.
//   build/release/microbench/structured_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tessera/engine/gbnf_grammar.h"
#include "tessera/engine/json_schema.h"
#include "tessera/engine/regex_dfa.h"
#include "tessera/engine/token_constraint.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace {

using namespace tessera;

std::shared_ptr<const engine::TokenVocabulary> vocabulary(std::string* why) {
  const char* env = std::getenv("TESSERA_VOCAB");
  const std::string path = env ? env : "../shared/tokenizers/ggml-vocab-llama-spm.gguf";
  auto file = model::open_model_file(path);
  if (!file.is_ok()) {
    *why = "no vocabulary at " + path + " (set TESSERA_VOCAB)";
    return nullptr;
  }
  auto tok = model::make_tokenizer(file->metadata);
  if (!tok.is_ok()) {
    *why = tok.status().to_string();
    return nullptr;
  }
  return engine::make_token_vocabulary(**tok);
}

// Advances `c` through `prefix` byte by byte (as single-byte tokens would).
void advance(engine::TokenConstraint& c, const engine::TokenVocabulary& vocab,
             const char* prefix) {
  for (const char* p = prefix; *p != '\0'; ++p) {
    for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
      if (vocab.piece(id) == std::string(1, *p)) {
        c.accept(id);
        break;
      }
    }
  }
}

void mask_at(benchmark::State& state, const char* prefix) {
  static std::string why;
  static const auto vocab = vocabulary(&why);
  if (!vocab) {
    state.SkipWithError(why.c_str());
    return;
  }
  auto schema = engine::JsonSchema::compile(nlohmann::json::parse(
      R"({"type": "object", "properties": {"name": {"type": "string"},
          "age": {"type": "number"}}, "required": ["name", "age"]})"));
  engine::TokenConstraint c({*schema, vocab});
  advance(c, *vocab, prefix);
  std::vector<float> logits(static_cast<size_t>(vocab->n_vocab()));
  int64_t allowed = 0;
  for (auto _ : state) {
    // With a token budget (as the engine calls it) the fastest completion is computed too.
    allowed = c.mask(logits, 1000);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["allowed"] = static_cast<double>(allowed);
  state.counters["vocab"] = vocab->n_vocab();
  state.counters["trie_nodes"] = static_cast<double>(vocab->all().nodes.size());
}

void BM_MaskAtObjectStart(benchmark::State& s) { mask_at(s, "{"); }
void BM_MaskInsideString(benchmark::State& s) { mask_at(s, "{\"name\": \"Al"); }
void BM_MaskInsideNumber(benchmark::State& s) { mask_at(s, "{\"age\": 4"); }
BENCHMARK(BM_MaskAtObjectStart)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskInsideString)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskInsideNumber)->Unit(benchmark::kMicrosecond);

// The fastest completion alone (closing bytes + the greedy split into vocabulary pieces), which
// mask() with a budget and keep_completable() each compute once per step.
void BM_ClosingInsideString(benchmark::State& state) {
  static std::string why;
  static const auto vocab = vocabulary(&why);
  if (!vocab) {
    state.SkipWithError(why.c_str());
    return;
  }
  auto schema = engine::JsonSchema::compile(nlohmann::json::parse(
      R"({"type": "object", "properties": {"name": {"type": "string"},
          "age": {"type": "number"}}, "required": ["name", "age"]})"));
  engine::TokenConstraint c({*schema, vocab});
  advance(c, *vocab, "{\"name\": \"Al");
  int64_t n = 0;
  for (auto _ : state) {
    const auto closing = c.closing();
    n = closing ? closing->n_tokens : -1;
    benchmark::DoNotOptimize(n);
  }
  state.counters["closing_tokens"] = static_cast<double>(n);
}
BENCHMARK(BM_ClosingInsideString)->Unit(benchmark::kMicrosecond);

// Big schemas and patterns (issue 45): a 200-property nested schema (four objects of 50
// properties whose keys share prefixes, as generated models' fields do), the mask at a key start
// inside one of them; a string under a permissive pattern (every token walked through the DFA);
// raw text under a regex (vLLM's structured_outputs.regex).
std::shared_ptr<const engine::JsonSchema> wide_schema() {
  nlohmann::json root = {{"type", "object"}, {"additionalProperties", false}};
  for (int o = 0; o < 4; ++o) {
    nlohmann::json obj = {{"type", "object"}, {"additionalProperties", false}};
    for (int k = 0; k < 50; ++k) {
      obj["properties"]["customer_field_" + std::to_string(o) + "_" + std::to_string(k)] =
          k % 2 == 0 ? nlohmann::json{{"type", "string"}} : nlohmann::json{{"type", "integer"}};
    }
    root["properties"]["section_" + std::to_string(o)] = obj;
  }
  return *engine::JsonSchema::compile(root);
}

void mask_with(benchmark::State& state, std::shared_ptr<const engine::JsonSchema> schema,
               const char* prefix) {
  static std::string why;
  static const auto vocab = vocabulary(&why);
  if (!vocab) {
    state.SkipWithError(why.c_str());
    return;
  }
  engine::TokenConstraint c({std::move(schema), vocab});
  advance(c, *vocab, prefix);
  std::vector<float> logits(static_cast<size_t>(vocab->n_vocab()));
  int64_t allowed = 0;
  for (auto _ : state) {
    allowed = c.mask(logits, 1000);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["allowed"] = static_cast<double>(allowed);
  state.counters["vocab"] = vocab->n_vocab();
}

void BM_MaskAtKeyOf200PropertySchema(benchmark::State& s) {
  static const auto schema = wide_schema();
  mask_with(s, schema, "{\"section_2\": {\"");
}
void BM_MaskInsidePatternString(benchmark::State& s) {
  static const auto schema = *engine::JsonSchema::compile(nlohmann::json::parse(
      R"({"type": "object", "properties": {"name": {"type": "string",
          "pattern": "^[A-Za-z][A-Za-z0-9 ,.'-]*$"}}, "required": ["name"]})"));
  mask_with(s, schema, "{\"name\": \"Al");
}
void BM_MaskInsideRegexText(benchmark::State& s) {
  static const auto schema =
      engine::JsonSchema::raw_text(*engine::RegexDfa::compile("[A-Z][a-z]+( [a-z]+)*\\.", engine::RegexDfa::Match::kFull));
  mask_with(s, schema, "Once upon a t");
}
BENCHMARK(BM_MaskAtKeyOf200PropertySchema)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskInsidePatternString)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaskInsideRegexText)->Unit(benchmark::kMicrosecond);

// GBNF grammars (llama-server's `grammar`): the mask walks the whole trie through GbnfMatcher
// (no shortcuts): a JSON grammar at an object's start and inside a string, and a sentence.
constexpr const char* kJsonGrammar = R"(root ::= ws value ws
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= [ \t\n\r]*
)";

void grammar_mask(benchmark::State& state, const char* grammar, const char* prefix) {
  static std::string why;
  static const auto vocab = vocabulary(&why);
  if (!vocab) {
    state.SkipWithError(why.c_str());
    return;
  }
  engine::StructuredOutput spec;
  spec.grammar = *engine::GbnfGrammar::compile(grammar);
  spec.vocab = vocab;
  engine::TokenConstraint c(spec);
  advance(c, *vocab, prefix);
  std::vector<float> logits(static_cast<size_t>(vocab->n_vocab()));
  int64_t allowed = 0;
  for (auto _ : state) {
    allowed = c.mask(logits, 1000);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["allowed"] = static_cast<double>(allowed);
}
void BM_GrammarMaskAtObjectStart(benchmark::State& s) { grammar_mask(s, kJsonGrammar, "{"); }
void BM_GrammarMaskInsideString(benchmark::State& s) { grammar_mask(s, kJsonGrammar, "{\"name\": \"Al"); }
void BM_GrammarMaskInsideSentence(benchmark::State& s) {
  grammar_mask(s, "root ::= [A-Z] [a-z]+ (\" \" [a-z]+)* \".\"", "Once upon a t");
}
BENCHMARK(BM_GrammarMaskAtObjectStart)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GrammarMaskInsideString)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GrammarMaskInsideSentence)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
