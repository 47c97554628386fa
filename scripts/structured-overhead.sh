#!/usr/bin/env bash
# What structured output's token mask costs per decoded token: the same completions, one at a
# time, with and without response_format (json_object, and a json_schema with free strings),
# alternating, on a SmolLM2-135M-shaped model (49k vocabulary; random weights, so the text is
# noise but the mask walks every kind of position). Prints ms per generated token per round.
# Usage: scripts/structured-overhead.sh [TESSERA] [ROUNDS]
set -euo pipefail
TESSERA=${1:-build/release/tessera}
ROUNDS=${2:-5}
MODEL=${MODEL:-$HOME/.cache/tessera/synth-smollm2-135m-q8_0.gguf}
mkdir -p "$(dirname "$MODEL")"
[ -f "$MODEL" ] || "$TESSERA" synth --shape smollm2-135m --dtype q8_0 -o "$MODEL" >/dev/null
. "$(dirname "$0")/lib/server.sh"  # start/stop/health of servers (SERVER_PID, SERVER_PORT)
trap stop_server EXIT
start_tessera_server /tmp/structured-overhead.log --model "$MODEL" --threads 2 --parallel 1
wait_healthy "http://127.0.0.1:$SERVER_PORT" 30
run() {  # run FORMAT_JSON -> ms per completion token
  python3 - "$1" "$SERVER_PORT" <<'PY'
import json, sys, time, urllib.request
fmt = json.loads(sys.argv[1])
body = {"prompt": "Once upon a time", "max_tokens": 128, "temperature": 0.8, "seed": 1, "ignore_eos": True}
if fmt: body["response_format"] = fmt
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[2]}/v1/completions", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
t = time.perf_counter()
out = json.load(urllib.request.urlopen(req))
dt = time.perf_counter() - t
print(f"{1000 * dt / out['usage']['completion_tokens']:.3f}")
PY
}
SCHEMA='{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","properties":{"title":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"n":{"type":"number"}}}}}'
run null >/dev/null  # warm-up
echo "round plain_ms_per_token json_object_ms json_schema_ms"
for r in $(seq "$ROUNDS"); do
  echo "$r $(run null) $(run '{"type":"json_object"}') $(run "$SCHEMA")"
done
