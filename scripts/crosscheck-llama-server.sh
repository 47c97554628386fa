#!/usr/bin/env bash
# Cross-checks `tessera bench serve` against llama.cpp's `llama-server` (built by you, outside this
# repository): per request, the client's TTFT and E2E over the server's own timings (prompt_ms;
# prompt_ms + predicted_ms, read from the final stream chunk). Two workloads:
#   single  one request at a time, 256-token prompts (nothing but the request in the server)
#   pair    two concurrent streams, 64-token prompts (a new request can wait for the other
#           stream's decode step before its prompt runs: time the server's prompt_ms leaves out)
# Distinct prompts throughout (--library-size 64): a repeated prompt hits llama-server's prompt cache,
# its prompt_ms drops to a few ms and the fixed ~25 ms of HTTP + tokenization + first-token
# sampling that only the client sees dominates the ratio.
#   scripts/crosscheck-llama-server.sh /path/to/llama-server [out-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
llama_server="${1:?usage: $0 /path/to/llama-server [out-dir]}"
out="${2:-$HOME/.cache/tessera/bench/crosscheck}"
tessera=build/release/tessera
[ -x "$tessera" ] || ./scripts/build.sh release >/dev/null
mkdir -p "$out"
model="$HOME/.cache/tessera/bench/synth-smollm2-135m-q8_0.gguf"
[ -f "$model" ] || "$tessera" synth --shape smollm2-135m --dtype q8_0 --out "$model" >/dev/null
port=18391
. scripts/lib/server.sh  # start/stop/health of servers (SERVER_PID)
trap stop_server EXIT
start_server "$out/llama-server.log" "$llama_server" -m "$model" --host 127.0.0.1 --port "$port" \
  -np 4 -c 4096 -t 1
wait_healthy "http://127.0.0.1:$port" 60
common=(--target "http://127.0.0.1:$port" --model smollm2 --tokenizer "$model" --ignore-eos --no-progress)
"$tessera" bench serve "${common[@]}" --scenario single-stream -n 16 --warmup 2 --library-size 64 --input-len 256 \
  --output-len 32 --out "$out/single" > "$out/single.txt"
"$tessera" bench serve "${common[@]}" --scenario concurrency --concurrency 2 -n 16 --warmup 2 --library-size 64 \
  --input-len 64 --output-len 32 --out "$out/pair" > "$out/pair.txt"
python3 - "$out" <<'PY'
import json, os, statistics as st, sys
print("| workload | metric | client/server mean | min | max | requests within 10% |")
print("|---|---|---:|---:|---:|---:|")
for w in ("single", "pair"):
    rows = [json.loads(l) for l in open(os.path.join(sys.argv[1], w, "requests.jsonl"))]
    rows = [r for r in rows if not r.get("warmup") and "server_ttft_ms" in r]
    for k, ck in (("ttft", "ttft_ms"), ("e2e", "e2el_ms")):
        q = [r[ck] / r["server_" + k + "_ms"] for r in rows]
        ok = sum(1 for x in q if abs(x - 1) <= 0.10)
        print(f"| {w} | {k.upper()} | {st.mean(q):.3f} | {min(q):.3f} | {max(q):.3f} | {ok}/{len(q)} |")
PY
