#!/usr/bin/env bash
# Side-by-side serving benchmark: `tessera serve` and llama.cpp's `llama-server` (built by you,
# outside this repository) on the same synthetic GGUF, same threads and parallel slots, driven by
# the same client (`tessera bench serve`, closed loop at a fixed concurrency). Runs alternate
# between the servers (tessera, llama.cpp, tessera, ...) so load from anything else on the machine
# falls on both; the table reports the median of the runs and the ratio.
# Then the prefix-reuse check: requests sharing a ~1,000-token prefix against `tessera serve` with
# and without the prefix cache (median TTFT, one request at a time after a warm-up).
#   scripts/bench-serve-vs-llamacpp.sh /path/to/llama-server [out-dir] [runs]
# Env: SHAPE (smollm2-135m), DTYPE (q8_0), THREADS (nproc), PARALLEL (16), CONCURRENCY (16),
#      PROMPTS (64 per run), INPUT_LEN (128), OUTPUT_LEN (128); TESSERA_ISA=avx2 runs Tessera's
#      AVX2 kernels (compare with a llama.cpp built for AVX2 only, scripts/bench-vs-llamacpp.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
llama_server="${1:?usage: $0 /path/to/llama-server [out-dir] [runs]}"
out="${2:-$HOME/.cache/tessera/bench/serve}"
runs="${3:-3}"
shape="${SHAPE:-smollm2-135m}"; dtype="${DTYPE:-q8_0}"
threads="${THREADS:-$(nproc)}"; parallel="${PARALLEL:-16}"; conc="${CONCURRENCY:-16}"
prompts="${PROMPTS:-64}"; in_len="${INPUT_LEN:-128}"; out_len="${OUTPUT_LEN:-128}"
tessera=build/release/tessera
[ -x "$tessera" ] || ./scripts/build.sh release >/dev/null
mkdir -p "$out"
model="$HOME/.cache/tessera/bench/synth-$shape-$dtype.gguf"
[ -f "$model" ] || "$tessera" synth --shape "$shape" --dtype "$dtype" --out "$model" >/dev/null
name=$(basename "$model" .gguf)
ctx_per_slot=1024
port=18330

. scripts/lib/server.sh  # start/stop/health of servers (SERVER_PID)
trap stop_server EXIT
start_tessera() {  # extra flags...
  "$tessera" serve -m "$model" --port "$port" -t "$threads" --parallel "$parallel" \
    -c "$ctx_per_slot" "$@" > "$out/tessera-server.log" 2>&1 &
  SERVER_PID=$!
  wait_healthy "http://127.0.0.1:$port" 60
}
start_llama() {
  # -c is the total: parallel x ctx_per_slot, so each slot gets the same context as Tessera's.
  # --no-mmap: the weights read into memory, as Tessera's load does (a mapping's idle file pages
  # can be paged out on a small machine between runs).
  "$llama_server" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" -np "$parallel" \
    -c $((parallel * ctx_per_slot)) --no-mmap > "$out/llama-server.log" 2>&1 &
  SERVER_PID=$!
  wait_healthy "http://127.0.0.1:$port" 60
}
bench() {  # label, then extra bench flags
  local label=$1; shift
  "$tessera" bench serve --target "http://127.0.0.1:$port" --model "$name" --tokenizer "$model" \
    --no-progress --out "$out/$label" "$@" > "$out/$label.txt" 2>&1
}

# SKIP_SIDE_BY_SIDE=1 reuses the runs already in out-dir and redoes only the prefix check.
for run in $(seq 1 "$runs"); do
  [ "${SKIP_SIDE_BY_SIDE:-0}" = 1 ] && break
  for server in tessera llamacpp; do
    if [ $server = tessera ]; then start_tessera; else start_llama; fi
    bench "$server-run$run" --scenario concurrency --concurrency "$conc" -n "$prompts" --warmup 4 \
      --input-len "$in_len" --output-len "$out_len" --ignore-eos --seed "$run"
    stop_server
    echo "run $run $server: $(grep -E '^throughput' "$out/$server-run$run.txt")"
  done
done

# Prefix reuse: a shared prefix of about 1,000 tokens (33 sentences of ~30 tokens in the synthetic
# vocabulary) and a short distinct question per request.
python3 - "$out/prefix.jsonl" <<'PY'
import json, sys
prefix = " ".join(f"Section {i} of the shared operating manual says to check item {i * 7 % 13}." for i in range(33))
with open(sys.argv[1], "w") as f:
    for q in range(40):
        f.write(json.dumps({"prompt": prefix + f" Question {q}: what does item {q} say?", "max_tokens": 16}) + "\n")
PY
for mode in reuse no-reuse; do
  if [ $mode = reuse ]; then start_tessera; else start_tessera --no-prefix-cache; fi
  bench "prefix-$mode" --scenario single-stream -n 32 --warmup 2 --prompts "$out/prefix.jsonl" --ignore-eos
  stop_server
done

python3 - "$out" "$runs" <<'PY'
import json, os, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def load(label):
    with open(os.path.join(out, label, "summary.json")) as f:
        return json.load(f)
rows = {s: [load(f"{s}-run{r}") for r in range(1, runs + 1)] for s in ("tessera", "llamacpp")}
def med(s, key):
    return statistics.median(x[key] for x in rows[s])
print(f"| metric (median of {runs} runs) | tessera | llama-server | ratio |")
print("|---|---:|---:|---:|")
for key, better in (("output_throughput", "higher"), ("median_ttft_ms", "lower"), ("median_tpot_ms", "lower"), ("p99_ttft_ms", "lower")):
    t, l = med("tessera", key), med("llamacpp", key)
    ratio = t / l if better == "higher" else l / t
    print(f"| {key} | {t:.1f} | {l:.1f} | {ratio:.2f}x |")
r, n = load("prefix-reuse"), load("prefix-no-reuse")
print()
print("| prefix workload (tessera) | median TTFT ms | mean input tokens |")
print("|---|---:|---:|")
for label, s in (("prefix cache on", r), ("prefix cache off", n)):
    print(f"| {label} | {s['median_ttft_ms']:.1f} | {s['total_input_tokens'] / max(1, s['completed']):.0f} |")
print(f"\nTTFT ratio off/on: {n['median_ttft_ms'] / r['median_ttft_ms']:.1f}x")
PY
