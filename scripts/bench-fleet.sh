#!/usr/bin/env bash
# The many-model fleet benchmark: eight models (synthetic SmolLM2-135M, a 360M shape and
# TinyLlama-1.1B in Q8_0 and Q4_0, plus the two real 260K models from ../shared) on one shared
# device, each fed one ServeGen client's arrivals (time-compressed), replayed once per idle
# policy (always-on, fixed keep-alive, adaptive) in one run.
#   scripts/bench-fleet.sh [TESSERA] [OUT.json] [extra `bench fleet` flags...]
# The span and load are set by WINDOWS (144: one day), FIRST (first window), SCALE (time
# compression), PEAK (replay req/s of each client's busiest window), POLICIES and CLIENTS.
# Models are synthesized once into ~/.cache/tessera/fleet8/ (about 2.5 GB). Needs ../shared
# (or TESSERA_SHARED_DIR) for the real models and the traces.
set -euo pipefail
cd "$(dirname "$0")/.."
tessera="${1:-build/release/tessera}"
out="${2:-}"
shift $(( $# > 2 ? 2 : $# ))
shared="${TESSERA_SHARED_DIR:-../shared}"
dir="${HOME}/.cache/tessera/fleet8"
mkdir -p "$dir"
synth() {  # NAME SEED ARGS...
  local name="$1" seed="$2"
  shift 2
  [ -f "$dir/$name.gguf" ] || "$tessera" synth "$@" --seed "$seed" -o "$dir/$name.gguf"
}
synth smollm2-135m-q8_0 1 --shape smollm2-135m --dtype q8_0
synth smollm2-135m-q4_0 2 --shape smollm2-135m --dtype q4_0
synth smollm2-360m-q8_0 3 --shape smollm2-135m --dim 960 --layers 32 --heads 15 --kv-heads 5 --ffn 2560 --dtype q8_0
synth smollm2-360m-q4_0 4 --shape smollm2-135m --dim 960 --layers 32 --heads 15 --kv-heads 5 --ffn 2560 --dtype q4_0
synth tinyllama-1.1b-q8_0 5 --shape tinyllama-1.1b --dtype q8_0
synth tinyllama-1.1b-q4_0 6 --shape tinyllama-1.1b --dtype q4_0
models="$(cd "$shared/models" && pwd)"
cat > "$dir/fleet.json" <<JSON
{"models": [
  {"path": "smollm2-135m-q8_0.gguf"},
  {"path": "smollm2-135m-q4_0.gguf"},
  {"path": "smollm2-360m-q8_0.gguf"},
  {"path": "smollm2-360m-q4_0.gguf"},
  {"path": "tinyllama-1.1b-q8_0.gguf"},
  {"path": "tinyllama-1.1b-q4_0.gguf"},
  {"path": "$models/stories260K.bin", "tokenizer": "$models/stories260K-tok512.bin"},
  {"path": "$models/aidreams260K.bin", "tokenizer": "$models/aidreams260K-tok512.bin"}
]}
JSON
args=(bench fleet --config "$dir/fleet.json" --servegen "$shared/traces/servegen/language/m-mid"
      --first-window "${FIRST:-0}" --windows "${WINDOWS:-144}" --time-scale "${SCALE:-600}"
      --peak-rps "${PEAK:-0.5}" --policies "${POLICIES:-always-on,fixed,adaptive}"
      ${CLIENTS:+--clients "$CLIENTS"} --keep-alive 600 --ttft-slo 1
      --prompt-tokens 16 --max-tokens 4 --ctx-size 256 "$@")
echo "+ $tessera ${args[*]}"
if [ -n "$out" ]; then
  "$tessera" "${args[@]}" --json > "$out"
  echo "wrote $out"
else
  "$tessera" "${args[@]}"
fi
