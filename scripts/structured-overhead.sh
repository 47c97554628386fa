#!/usr/bin/env bash
# What structured output's token mask costs per decoded token: the same completions, one at a
# time, with and without response_format (json_object, and a json_schema with free strings),
# alternating, on a SmolLM2-135M-shaped model (49k vocabulary; random weights, so the text is
# noise but the mask walks every kind of position). Prints ms per generated token per round.
# Usage: scripts/structured-overhead.sh [TESSERA] [ROUNDS]   (port 18089)
set -euo pipefail
TESSERA=${1:-build/release/tessera}
ROUNDS=${2:-5}
MODEL=${MODEL:-$HOME/.cache/tessera/synth-smollm2-135m-q8_0.gguf}
mkdir -p "$(dirname "$MODEL")"
[ -f "$MODEL" ] || "$TESSERA" synth --shape smollm2-135m --dtype q8_0 -o "$MODEL" >/dev/null
"$TESSERA" serve --model "$MODEL" --port 18089 --threads 2 --parallel 1 >/tmp/structured-overhead.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf localhost:18089/health >/dev/null && break; sleep 0.2; done
run() {  # run FORMAT_JSON -> ms per completion token
  python3 - "$1" <<'PY'
import json, sys, time, urllib.request
fmt = json.loads(sys.argv[1])
body = {"prompt": "Once upon a time", "max_tokens": 128, "temperature": 0.8, "seed": 1, "ignore_eos": True}
if fmt: body["response_format"] = fmt
req = urllib.request.Request("http://localhost:18089/v1/completions", json.dumps(body).encode(),
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
