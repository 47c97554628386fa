#!/usr/bin/env bash
# Builds the file-format fuzzers (GGUF, safetensors, Hugging Face JSON) and the chat-template
# interpreter's with clang (libFuzzer + ASan + UBSan) in build/fuzz/, writes their seed corpora and
# fuzzes the GGUF reader for N seconds (default 60), the safetensors reader and the Jinja
# interpreter for half that each, and the Hugging Face JSON parsers (config.json, shard index,
# tokenizer.json) for a quarter, structured output's schema compiler and matcher for a third, its
# GBNF grammar compiler and matcher for a third.
# Exits non-zero when a fuzzer finds a crash, leak, sanitizer
# report or broken round trip; the input is saved under build/fuzz/fuzz-artifacts/.
# Usage: scripts/fuzz.sh [seconds]   Env: TESSERA_FUZZ_BUILD_DIR, JOBS (default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build="${TESSERA_FUZZ_BUILD_DIR:-$root/build/fuzz}"
jobs="${JOBS:-2}"

# A build configured with TESSERA_FUZZ_TARGETS=ON (scripts/build.sh asan, as scripts/test.sh runs
# it) already has the fuzz targets beside its tests: use it as it is. Otherwise configure a
# fuzz-only build (every target coverage-instrumented).
if ! grep -q '^TESSERA_FUZZ_TARGETS:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
    -DTESSERA_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF >/dev/null
fi
ninja -C "$build" -j "$jobs" gguf_fuzzer gguf_seed_writer safetensors_fuzzer safetensors_seed_writer \
  hf_fuzzer hf_seed_writer jinja_fuzzer json_schema_fuzzer gbnf_fuzzer

artifacts="$build/fuzz-artifacts/"
mkdir -p "$artifacts"

# Fuzzes one reader: fuzz_one NAME SECONDS (corpus written by NAME_seed_writer, dictionary
# fuzz/NAME.dict).
fuzz_one() {
  local name="$1" secs="$2" corpus="$build/fuzz-corpus/$1"
  mkdir -p "$corpus"
  "$build/fuzz/${name}_seed_writer" "$corpus"
  # -max_len covers the seeds (a few hundred bytes) with room to grow; -rss_limit_mb turns a
  # runaway allocation into a reported failure rather than a hung machine.
  "$build/fuzz/${name}_fuzzer" "$corpus" \
    -dict="$root/fuzz/$name.dict" \
    -max_len=65536 \
    -max_total_time="$secs" \
    -rss_limit_mb=2048 \
    -print_final_stats=1 \
    -artifact_prefix="$artifacts$name-"
}
fuzz_one gguf "$seconds"
fuzz_one safetensors "$(( (seconds + 1) / 2 ))"
fuzz_one hf "$(( (seconds + 3) / 4 ))"

# The Jinja interpreter: seeds are the real chat templates of ../shared/templates when present
# (never committed), plus a small template written here.
jinja_corpus="$build/fuzz-corpus/jinja"
mkdir -p "$jinja_corpus"
shared_templates="${TESSERA_SHARED_DIR:-$root/../shared}/templates"
if [ -d "$shared_templates" ]; then cp "$shared_templates"/*.jinja "$jinja_corpus"/ 2>/dev/null || true; fi
printf '%s' "{% for m in messages %}{{ '<|' + m.role + '|>' + m.content | trim }}{% endfor %}" \
  >"$jinja_corpus/seed-loop.jinja"
# The issue-42 attacks as seeds: the fuzzer starts next to the bounds (time, memory, copies).
printf '%s' "{% set s = 'a' * 6000000 %}{% for i in range(4990) %}{% if 'b' in s %}{% endif %}{{ s[0] }}{{ s|length }}{% endfor %}" \
  >"$jinja_corpus/seed-time.jinja"
printf '%s' "{% set s = 'a' * 5000000 %}{% set l = [s] * 60 %}{{ l|length }}{{ ('\n' * 2000)|indent(40, blank=true) }}{{ l|join|length }}" \
  >"$jinja_corpus/seed-memory.jinja"
"$build/fuzz/jinja_fuzzer" "$jinja_corpus" \
  -dict="$root/fuzz/jinja.dict" \
  -max_len=65536 \
  -max_total_time="$(( (seconds + 1) / 2 ))" \
  -rss_limit_mb=1024 \
  -malloc_limit_mb=256 \
  -timeout=10 \
  -print_final_stats=1 \
  -artifact_prefix="${artifacts}jinja-"

# Structured output: seeds are "schema NUL document" pairs written here.
schema_corpus="$build/fuzz-corpus/json_schema"
mkdir -p "$schema_corpus"
printf '%s\0%s' '{"type":"object","properties":{"a":{"type":"integer"},"b":{"enum":["x","y"]}},"required":["a"]}' \
  '{"a": -12, "b": "y"}' >"$schema_corpus/seed-object"
printf '%s\0%s' '{"type":"array","items":{"type":["string","null"]},"minItems":1,"maxItems":3}' \
  '["\u00e9\n", null]' >"$schema_corpus/seed-array"
printf '%s\0%s' '{}' '{"k": [1.5e3, true, {"n": null}]}' >"$schema_corpus/seed-any"
# And every schema of the structured-output test corpus with its first valid instance ($ref,
# recursion, anyOf/oneOf, allOf, prefixItems, numeric bounds, ...).
python3 - "$schema_corpus" "$root/tests/engine/data/json_schema_corpus.json" <<'PY'
import json, sys
for i, e in enumerate(json.load(open(sys.argv[2], encoding="utf-8"))):
    with open(f"{sys.argv[1]}/seed-corpus-{i}", "wb") as f:
        f.write(json.dumps(e["schema"]).encode() + b"\0" + json.dumps(e["valid"][0]).encode())
PY
"$build/fuzz/json_schema_fuzzer" "$schema_corpus" \
  -max_len=4096 \
  -max_total_time="$(( (seconds + 2) / 3 ))" \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="${artifacts}json_schema-"

# GBNF grammars: seeds are "grammar NUL text" pairs written here, hostile shapes among them
# (ambiguity, nested repetition, deep nesting) so that the fuzzer starts next to the bounds.
gbnf_corpus="$build/fuzz-corpus/gbnf"
mkdir -p "$gbnf_corpus"
printf '%s\0%s' 'root ::= ws value ws
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* ws )? "}"
array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= [ \t\n]*' '{"a": [1, -2.5e3, "\u00e9\n"], "b": null}' >"$gbnf_corpus/seed-json"
printf '%s\0%s' 'root ::= [A-Z] [a-z]* (" " [a-z]+){2,6} "."  # a sentence' 'The cat sat down.' \
  >"$gbnf_corpus/seed-sentence"
printf '%s\0%s' 'root ::= ("a" | "aa" | "aaa")* x
x ::= "(" root ")" | [^\x00-\x40é-ü]?' 'aaaa((aa(a' >"$gbnf_corpus/seed-ambiguous"
printf '%s\0%s' 'root ::= (("a"{0,30}){0,30}){2} "\U0001F600"' 'aaaaaaa' >"$gbnf_corpus/seed-nested"
"$build/fuzz/gbnf_fuzzer" "$gbnf_corpus" \
  -dict="$root/fuzz/gbnf.dict" \
  -max_len=4096 \
  -max_total_time="$(( (seconds + 2) / 3 ))" \
  -rss_limit_mb=2048 \
  -timeout=10 \
  -print_final_stats=1 \
  -artifact_prefix="${artifacts}gbnf-"
