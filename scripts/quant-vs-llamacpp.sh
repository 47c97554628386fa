#!/usr/bin/env bash
# The measurements of docs/QUANTIZATION.md, side by side with llama.cpp (built by you, outside
# this repository; pass the folder holding llama-quantize and llama-perplexity):
#   1. tensor types: `tessera quantize` and `llama-quantize` of one random-weight 8-layer,
#      256-wide grouped-query model for every type and mix; prints whether every tensor's type
#      and the file size agree;
#   2. perplexity of the same files in both engines (llama-perplexity with --no-mmap, same
#      threads, -c 256 --chunks 8 on the first 400 kB of Brown);
#   3. the quality tables: stories260K and aidreams260K (../shared/models) quantized from their
#      llama2.c checkpoints to every type and mix, `tessera eval kl` against the f32 original
#      over Brown (stories -c 256 --chunks 100, aidreams -c 128 --chunks 200).
#   scripts/quant-vs-llamacpp.sh /path/to/llama.cpp/build/bin [work-dir]
# Needs a release build and scripts/fetch-corpus.sh (npm). About 5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:?usage: $0 /path/to/llama.cpp/build/bin [work-dir]}"
dir="${2:-/tmp/tessera-quant}"
T=$PWD/build/release/tessera
threads="${THREADS:-$(nproc)}"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x "$T" ] || { echo "build first: scripts/build.sh release" >&2; exit 1; }
brown=$(scripts/fetch-corpus.sh)
mkdir -p "$dir"
head -c 400000 "$brown" >"$dir/brown400k.txt"
types="q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl iq4_xs"
tensor_types() { "$T" info "$1" --tensors 2>&1 | grep -E "^  " | awk '{print $1, $2}' | sort; }
ppl_tessera() {
  "$T" eval perplexity -m "$1" -f "$2" -c "$3" --chunks "$4" -t "$threads" --json 2>/dev/null |
    python3 -c "import json,sys; print('%.4f' % json.load(sys.stdin)['perplexity'])"
}
ppl_llama() {
  local out
  out=$("$bin/llama-perplexity" -m "$1" -f "$2" -c "$3" -b "$3" --chunks "$4" -t "$threads" --no-mmap 2>&1 || true)
  grep -o "Final estimate: PPL = [0-9.]*" <<<"$out" | awk '{print $5}' | grep . ||
    echo "failed: $(tail -1 <<<"$out")"
}

echo "== 1. tensor types: tessera quantize vs llama-quantize"
"$T" synth --shape tiny --dim 256 --ffn 768 --layers 8 --heads 8 --kv-heads 2 --vocab-size 2048 \
  --dtype f32 -o "$dir/r.gguf" 2>/dev/null
for ty in $types; do
  "$T" quantize "$dir/r.gguf" "$dir/rt-$ty.gguf" --type "$ty" >/dev/null 2>&1
  "$bin/llama-quantize" "$dir/r.gguf" "$dir/rl-$ty.gguf" "${ty^^}" >/dev/null 2>&1
  if diff <(tensor_types "$dir/rt-$ty.gguf") <(tensor_types "$dir/rl-$ty.gguf") >/dev/null; then same=yes; else same=NO; fi
  echo "$ty: same tensor types $same, bytes $(stat -c %s "$dir/rt-$ty.gguf") (tessera) $(stat -c %s "$dir/rl-$ty.gguf") (llama.cpp)"
done

echo "== 2. perplexity of the same file in both engines (-c 256 --chunks 8)"
echo "| file | llama.cpp | Tessera |"
for f in r rl-q4_k_m rt-q4_k_m rl-q2_k rt-q2_k rl-iq4_xs rt-iq4_xs rl-q5_1 rt-q5_1; do
  echo "| $f | $(ppl_llama "$dir/$f.gguf" "$dir/brown400k.txt" 256 8) | $(ppl_tessera "$dir/$f.gguf" "$dir/brown400k.txt" 256 8) |"
done

echo "== 3. quality tables (tessera eval kl against the f32 original, Brown)"
for m in stories260K:256:100 aidreams260K:128:200; do
  IFS=: read -r name ctx chunks <<<"$m"
  src=../shared/models/$name.bin
  tok=../shared/models/$name-tok512.bin
  params=$("$T" info "$src" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['parameters'])")
  echo "$name (-c $ctx --chunks $chunks)"
  echo "| type | file | bits/weight | dPPL | mean KL | p99 KL | same top token |"
  for ty in q8_0 q6_k q5_k_m q5_k_s q5_1 q5_0 q4_k_m q4_k_s q4_1 iq4_nl iq4_xs q4_0 q3_k_l q3_k_m q3_k_s q2_k; do
    out="$dir/$name-$ty.gguf"
    "$T" quantize "$src" "$out" --type "$ty" >/dev/null 2>&1
    "$T" eval kl --base "$src" --tokenizer "$tok" -m "$out" -f "$brown" -c "$ctx" --chunks "$chunks" \
      -t "$threads" --json 2>/dev/null | python3 -c "
import json, os, sys
j = json.load(sys.stdin); size = os.path.getsize('$out')
print('| $ty | %.0f kB | %.2f | %+.3f | %.4f | %.3f | %.1f%% |' % (size / 1024, 8 * size / $params,
      j['delta_perplexity'], j['mean_kl'], j['p99_kl'], 100 * j['top1_agreement']))"
  done
done
echo "stories260K as GGUF, the same mix from both quantizers (mean KL against f32, -c 256 --chunks 100)"
GGUF_PY="$(dirname "$(dirname "$bin")")/gguf-py" /usr/bin/python3 ../shared/tools/mk_embedded.py "$dir/stories.gguf" >/dev/null
for ty in q4_k_m q3_k_m q2_k; do
  "$T" quantize "$dir/stories.gguf" "$dir/st-$ty.gguf" --type "$ty" >/dev/null 2>&1
  "$bin/llama-quantize" "$dir/stories.gguf" "$dir/ll-$ty.gguf" "${ty^^}" >/dev/null 2>&1
  for w in st ll; do
    kl=$("$T" eval kl --base "$dir/stories.gguf" -m "$dir/$w-$ty.gguf" -f "$brown" -c 256 --chunks 100 \
      -t "$threads" --json 2>/dev/null | python3 -c "import json,sys; print('%.4f' % json.load(sys.stdin)['mean_kl'])")
    echo "$ty $([ $w = st ] && echo tessera || echo llama-quantize): mean KL $kl"
  done
done
