#!/usr/bin/env bash
# The 2:4 sparsity figures of docs/QUANTIZATION.md ("2:4 sparsity"):
#   1. quality: stories260K and aidreams260K pruned 2:4 (magnitude; wanda where the build can
#      collect activation statistics) in f32 dense and in the packed f16 / q8_0 / q4_0 types,
#      `tessera eval kl` against the f32 original over Brown (as scripts/quant-vs-llamacpp.sh);
#   2. speed: TinyLlama-shaped random models in f16, q8_0, q4_0, dense vs 2:4 packed, alternating,
#      `tessera bench model -t 2 -p 64 -n 64 -r 3`.
# Usage: scripts/sparse-quality.sh [quality|speed|all] (Brown at .cache/corpus/brown.txt; run
# scripts/fetch-corpus.sh first). Build first: scripts/build.sh release tessera.
set -euo pipefail
cd "$(dirname "$0")/.."
T=build/release/tessera
what="${1:-all}"
dir="${TMPDIR:-/tmp}/tessera-sparse"
mkdir -p "$dir"
brown=.cache/corpus/brown.txt
[ -f "$brown" ] || brown=/work/main/.cache/corpus/brown.txt
threads=2
# Wanda calibrates on the last 300 kB of Brown; the evaluation reads its first chunks.
calib_text="$dir/calib.txt"
tail -c 300000 "$brown" >"$calib_text"

if [ "$what" = quality ] || [ "$what" = all ]; then
  echo "== quality (tessera eval kl against the f32 original, Brown)"
  for m in stories260K:256:100 aidreams260K:128:200; do
    IFS=: read -r name ctx chunks <<<"$m"
    src=../shared/models/$name.bin
    tok=../shared/models/$name-tok512.bin
    params=$("$T" info "$src" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['parameters'])")
    echo "$name (-c $ctx --chunks $chunks)"
    echo "| method | stored as | file | bits/weight | dPPL | mean KL | p99 KL | same top token |"
    for method in magnitude wanda; do
      for ty in f32:--dense f16: q8_0: q4_0: q8_0:--dense q4_0:--dense; do
        IFS=: read -r base flag <<<"$ty"
        out="$dir/$name-$method-$base${flag:+-dense}.gguf"
        calib=()
        [ "$method" = wanda ] && calib=(--calib "$calib_text" --tokenizer "$tok" -c "$ctx" --chunks 40)
        if ! "$T" prune "$src" "$out" --pattern 2:4 --method "$method" "${calib[@]}" --type "$base" $flag \
             -t "$threads" >/dev/null 2>"$dir/err"; then
          echo "| $method | $base ${flag:-packed} | $(head -c 160 "$dir/err") |"
          continue
        fi
        stored=$([ -n "$flag" ] && echo "$base dense" || echo "${base}_2of4")
        "$T" eval kl --base "$src" --tokenizer "$tok" -m "$out" -f "$brown" -c "$ctx" --chunks "$chunks" \
          -t "$threads" --json 2>/dev/null | python3 -c "
import json, os, sys
j = json.load(sys.stdin); size = os.path.getsize('$out')
print('| $method | $stored | %.0f kB | %.2f | %+.3f | %.4f | %.3f | %.1f%% |' % (size / 1024, 8 * size / $params,
      j['delta_perplexity'], j['mean_kl'], j['p99_kl'], 100 * j['top1_agreement']))"
      done
    done
  done
fi

if [ "$what" = speed ] || [ "$what" = all ]; then
  echo "== speed (TinyLlama-shaped, $threads threads; dense and 2:4 alternating, 3 rounds)"
  for ty in f16 q8_0 q4_0; do
    [ -f "$dir/tl-$ty.gguf" ] || "$T" synth --shape tinyllama-1.1b --dtype "$ty" -o "$dir/tl-$ty.gguf" >/dev/null
    [ -f "$dir/tl-$ty-24.gguf" ] || "$T" prune "$dir/tl-$ty.gguf" "$dir/tl-$ty-24.gguf" -t "$threads" >/dev/null 2>&1
  done
  for round in 1 2 3; do
    for ty in f16 q8_0 q4_0; do
      for f in "$dir/tl-$ty.gguf" "$dir/tl-$ty-24.gguf"; do
        "$T" bench model -m "$f" -t "$threads" -p 64 -n 64 -r 3 2>&1 |
          awk -v f="$(basename "$f")" -v r="$round" '/^\| (pp|tg)/ {print "round " r " " f " " $0}'
      done
    done
  done
fi
