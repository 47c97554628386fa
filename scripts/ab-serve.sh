#!/usr/bin/env bash
# A/B of `tessera serve` binaries on the 16-stream serving workload of bench-serve-vs-llamacpp.sh
# (synthetic SmolLM2-135M Q8_0, 2 threads, 16 slots, 64 requests of 128 in / 128 out), the
# binaries alternating run by run so load from elsewhere falls on all of them.
#   scripts/ab-serve.sh RUNS BINARY...        (copy each build's build/release/tessera aside first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:?usage: $0 RUNS BINARY...}; shift
model="$HOME/.cache/tessera/bench/synth-smollm2-135m-q8_0.gguf"
client=build/release/tessera
[ -f "$model" ] || "$client" synth --shape smollm2-135m --dtype q8_0 --out "$model" >/dev/null
port=18332
. scripts/lib/server.sh  # start/stop/health of servers (SERVER_PID)
trap stop_server EXIT
for r in $(seq 1 "$runs"); do
  for b in "$@"; do
    start_server /tmp/ab-serve.log "$b" serve -m "$model" --port $port -t 2 \
      --parallel 16 -c 1024
    wait_healthy "http://127.0.0.1:$port" 30
    out=$("$client" bench serve --target "http://127.0.0.1:$port" --model synth-smollm2-135m-q8_0 \
      --tokenizer "$model" --no-progress --scenario concurrency --concurrency 16 -n 64 --warmup 4 \
      --input-len 128 --output-len 128 --ignore-eos --seed "$r" 2>&1)
    stop_server
    echo "$b run$r: $(echo "$out" | grep -oE '[0-9.]+ output tok/s'), median TPOT $(echo "$out" | grep '^| TPOT' | awk -F'|' '{print $4}' | tr -d ' ') ms"
  done
done
