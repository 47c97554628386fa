#!/usr/bin/env bash
# Structured output side by side: `tessera serve` and llama.cpp's `llama-server` (built by you
# outside this repository; found by llama_bin: $LLAMA_CPP_BIN, ../peers/llama.cpp/build/bin or
# PATH) serve the same SmolLM2-135M-shaped synthetic GGUF (random weights: the answers say
# whether each engine keeps its output valid, refuses a schema, and how fast it decodes under a
# constraint, never anything about quality), one after the other, alternating by round. Every
# schema of tests/engine/data/json_schema_corpus.json goes to /v1/chat/completions as a
# json_schema response_format, greedy and at temperature 1.0 with seeds 1..SEEDS, one request at a
# time; scripts/structured_answers.py classifies each answer with python3-jsonschema (valid /
# refused / invalid / truncated / timeout) and prints a table per engine, output tok/s, and
# Tessera's constraint time per constrained token from its /metrics.
# Then the 200-property nested schema of structured_bench (four objects of 50 properties) through
# `tessera bench serve --response-format` on the in-process engine: the constraint engine's time
# per constrained output token.
#   scripts/structured-vs-llama-server.sh [OUT_DIR]       (default ~/.cache/tessera/bench/structured)
# Env: THREADS (nproc), SEEDS (3), MAX_TOKENS (256), TIMEOUT (120 s a request), ROUNDS (1, each
#      running the engines one after the other), ENGINES ("tessera llama-server"; one of them to
#      run a pass alone, "" for none; `structured_answers.py report OUT/*-round1.json` puts
#      separate passes side by side), WIDE (1: the 200-property run; 0: skip it), SHAPE (smollm2-135m),
#      DTYPE (q8_0), LLAMA_CPP_BIN. Needs python3-jsonschema.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-$HOME/.cache/tessera/bench/structured}"
threads="${THREADS:-$(nproc)}"; seeds="${SEEDS:-3}"; max_tokens="${MAX_TOKENS:-256}"
timeout="${TIMEOUT:-120}"; rounds="${ROUNDS:-1}"; engines="${ENGINES-tessera llama-server}"
shape="${SHAPE:-smollm2-135m}"; dtype="${DTYPE:-q8_0}"
corpus=tests/engine/data/json_schema_corpus.json
python3 -c 'import jsonschema' 2>/dev/null || { echo "needs python3-jsonschema" >&2; exit 1; }

. scripts/lib/server.sh  # start/stop/health of servers, synth_model, llama_bin
ensure_tessera
tessera="${TESSERA:-build/release/tessera}"
llama_server=""
case " $engines " in *" llama-server "*) llama_server="$(llama_bin llama-server)" ;; esac
model="$(synth_model "$shape" "$dtype")"
name="$(basename "$model" .gguf)"
mkdir -p "$out"
trap stop_server EXIT
echo "model $model, $threads threads, seeds 1..$seeds, max_tokens $max_tokens, $rounds round(s)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
     "flags:$(grep -m1 -o -w -e avx2 -e avx512f /proc/cpuinfo | sort -u | tr '\n' ' ')"
[ -z "$llama_server" ] ||
  echo "llama-server: $llama_server ($("$llama_server" --version 2>&1 | grep -m1 -i version || true))"

answers() {  # engine round [--metrics]
  local engine=$1 round=$2; shift 2
  python3 scripts/structured_answers.py run "http://127.0.0.1:$port" "$corpus" \
    "$out/$engine-round$round.json" --engine "$engine" --model "$name" --seeds "$seeds" \
    --max-tokens "$max_tokens" --timeout "$timeout" "$@" 2>"$out/$engine-round$round.log"
}
for round in $(seq 1 "$rounds"); do
  for engine in $engines; do
    if [ "$engine" = tessera ]; then
      # One slot each, the whole context for it, the same (ChatML) template: the synthetic model
      # has none of its own.
      start_tessera_server "$out/tessera-server.log" --model "$model" --threads "$threads" \
        --parallel 1 -c 2048 --chat-template chatml
      port=$SERVER_PORT
      wait_healthy "http://127.0.0.1:$port" 60
      answers tessera "$round" --metrics
    else
      # llama.cpp reads the file into memory (--no-mmap) as Tessera does.
      port=$(free_port)
      start_server "$out/llama-server.log" "$llama_server" -m "$model" --host 127.0.0.1 \
        --port "$port" -t "$threads" -np 1 -c 2048 --no-mmap --chat-template chatml
      wait_healthy "http://127.0.0.1:$port" 120
      answers llama-server "$round"
    fi
    stop_server
  done
  echo "round $round done"
done
reports=()
for engine in $engines; do reports+=("$out/$engine-round1.json"); done
[ -z "$engines" ] || python3 scripts/structured_answers.py report "${reports[@]}"
if [ "$rounds" -gt 1 ]; then
  python3 - "$out" "$rounds" $engines <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
for e in sys.argv[3:]:
    rs = [json.load(open(f"{out}/{e}-round{r}.json")) for r in range(1, rounds + 1)]
    tps = [r["completion_tokens"] / r["answer_seconds"] for r in rs if r["answer_seconds"]]
    print(f"{e}: output tok/s per round {', '.join(f'{t:.1f}' for t in tps)}; median {statistics.median(tps):.1f}")
PY
fi

[ "${WIDE:-1}" = 1 ] || exit 0
# The 200-property nested schema (structured_bench's wide_schema, the four sections required so
# that the value opens each 50-property object).
python3 - "$out/wide-schema.json" <<'PY'
import json, sys
sections = {}
for o in range(4):
    props = {f"customer_field_{o}_{k}": {"type": "string" if k % 2 == 0 else "integer"} for k in range(50)}
    sections[f"section_{o}"] = {"type": "object", "properties": props, "additionalProperties": False}
json.dump({"type": "object", "properties": sections, "required": list(sections),
           "additionalProperties": False}, open(sys.argv[1], "w"))
PY
for run in 1 2 3; do
  "$tessera" bench serve --target "inproc:$model" --response-format "$out/wide-schema.json" \
    --scenario single-stream -n 8 --warmup 1 --input-len 32 --output-len "$max_tokens" \
    -t "$threads" --no-progress > "$out/wide-run$run.txt" 2>&1
  echo "200-property schema, run $run: $(grep -E '^constraint engine' "$out/wide-run$run.txt")"
done
