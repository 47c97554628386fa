#!/usr/bin/env bash
# The importance-matrix measurements of docs/QUANTIZATION.md (a sibling of quant-vs-llamacpp.sh):
#   1. the quality tables with and without an importance matrix: stories260K and aidreams260K
#      (../shared/models) calibrated with `tessera eval imatrix` on a calibration part of Brown,
#      quantized from their llama2.c checkpoints to every type and mix without and with
#      `--imatrix`, each compared with the f32 original on a disjoint evaluation part
#      (`tessera eval kl` against its log-probabilities saved once; stories -c 256 --chunks 100,
#      aidreams -c 128 --chunks 200, as the tables without imatrix);
#   2. llama.cpp side by side on stories260K as GGUF (mk_embedded.py): llama-imatrix and
#      `tessera eval imatrix` on the same file and text (column mean squares compared, and the
#      perplexity each prints), and Q4_K_M from llama-quantize and from tessera quantize, each
#      without and with the same (Tessera-made) imatrix, by mean KL.
# Split of Brown: evaluation = its first 2,000,000 bytes (the tables read its first ~25,600
# tokens); calibration = bytes 3,000,001 .. 4,000,000; the two do not overlap.
#   scripts/imatrix-quality.sh /path/to/llama.cpp/build/bin [work-dir]
# (BROWN=path overrides scripts/fetch-corpus.sh.) Needs a release build, llama-imatrix and
# llama-quantize built outside the repository, /usr/bin/python3 with numpy. About 15 min on 2 cores.
#   3. the same table for a model trained here (tessera train) whose rows are whole 256-blocks,
#      so q4_k/q5_k/q6_k/q2_k/q3_k/iq4_xs are themselves rather than their 32-block fallbacks.
# ONLY=1|2|3 runs one section (3 needs no llama.cpp; pass any directory); TYPES="..." limits them.
# COVARIANCE=1: sections 1 and 3 calibrate with `eval imatrix --covariance`, so the "imatrix"
# columns are error-feedback quantization (model/gptq.h) instead of per-column weights.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:?usage: $0 /path/to/llama.cpp/build/bin [work-dir]}"
dir="${2:-/tmp/tessera-imatrix}"
T=$PWD/build/release/tessera
threads="${THREADS:-$(nproc)}"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x "$T" ] || { echo "build first: scripts/build.sh release" >&2; exit 1; }
brown="${BROWN:-$(scripts/fetch-corpus.sh)}"
mkdir -p "$dir"
head -c 2000000 "$brown" >"$dir/eval.txt"
head -c 4000000 "$brown" | tail -c 1000000 >"$dir/calib.txt"
gguf_py="$(dirname "$(dirname "$bin")")/gguf-py"

kl_row() {  # kl_row FILE LOGITS [--tokenizer TOK] -> "dPPL | KL | p99 | top;unrounded mean KL"
  local f=$1 logits=$2
  shift 2
  "$T" eval kl --base-logits "$logits" "$@" -m "$f" -f "$dir/eval.txt" -t "$threads" \
    --json 2>/dev/null | python3 -c "
import json, sys
j = json.load(sys.stdin)
print('%+.3f | %.4f | %.3f | %.1f%%;%r' % (j['delta_perplexity'], j['mean_kl'], j['p99_kl'],
                                          100 * j['top1_agreement'], j['mean_kl']))"
}

# table NAME MODEL CTX CHUNKS [--tokenizer TOK]: the quality table of section 1 for one model.
table() {
  local name=$1 src=$2 ctx=$3 chunks=$4
  shift 4
  local params
  params=$("$T" info "$src" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['parameters'])")
  "$T" eval imatrix -m "$src" "$@" -f "$dir/calib.txt" -c "$ctx" --chunks 200 \
    -t "$threads" ${COVARIANCE:+--covariance} -o "$dir/$name.imatrix" 2>/dev/null
  "$T" eval perplexity -m "$src" "$@" -f "$dir/eval.txt" -c "$ctx" --chunks "$chunks" \
    -t "$threads" --save-logits "$dir/$name.logits" 2>/dev/null | tail -1
  echo "$name (-c $ctx --chunks $chunks; imatrix: 200 chunks of $ctx tokens of the calibration part)"
  echo "| type | file | bits/weight | ΔPPL | mean KL | p99 KL | same top | ΔPPL imatrix | mean KL imatrix | p99 KL imatrix | same top imatrix | KL change |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for ty in ${TYPES:-q8_0 q6_k q5_k_m q5_k_s q5_1 q5_0 q4_k_m q4_k_s q4_1 iq4_nl iq4_xs q4_0 q3_k_l q3_k_m q3_k_s q2_k}; do
    "$T" quantize "$src" "$dir/$name-$ty.gguf" --type "$ty" >/dev/null 2>&1
    "$T" quantize "$src" "$dir/$name-$ty-im.gguf" --type "$ty" --imatrix "$dir/$name.imatrix" >/dev/null 2>&1
    plain=$(kl_row "$dir/$name-$ty.gguf" "$dir/$name.logits" "$@")
    weighted=$(kl_row "$dir/$name-$ty-im.gguf" "$dir/$name.logits" "$@")
    size=$(stat -c %s "$dir/$name-$ty.gguf")
    change=$(python3 -c "print('%+.1f%%' % (100 * (${weighted#*;} / ${plain#*;} - 1)))")
    printf '| %s | %.0f kB | %s | %s | %s | %s |\n' "$ty" "$(bc -l <<<"$size / 1024")" \
      "$(python3 -c "print('%.2f' % (8 * $size / $params))")" "${plain%;*}" "${weighted%;*}" "$change"
  done
}

if [ -z "${ONLY:-}" ] || [ "$ONLY" = 1 ]; then
echo "== 1. quality tables without / with imatrix"
table stories260K ../shared/models/stories260K.bin 256 100 --tokenizer ../shared/models/stories260K-tok512.bin
table aidreams260K ../shared/models/aidreams260K.bin 128 200 --tokenizer ../shared/models/aidreams260K-tok512.bin
fi

if [ -z "${ONLY:-}" ] || [ "$ONLY" = 2 ]; then
echo "== 2. llama.cpp side by side on stories260K as GGUF"
GGUF_PY="$gguf_py" /usr/bin/python3 ../shared/tools/mk_embedded.py "$dir/stories.gguf" >/dev/null
"$T" eval imatrix -m "$dir/stories.gguf" -f "$dir/calib.txt" -c 256 --chunks 100 -t "$threads" \
  -o "$dir/st.imatrix" 2>/dev/null
"$bin/llama-imatrix" -m "$dir/stories.gguf" -f "$dir/calib.txt" -c 256 --chunks 100 -t "$threads" \
  -o "$dir/ll.imatrix.gguf" >"$dir/llama-imatrix.log" 2>&1
echo "llama-imatrix $(grep -o 'Final estimate: PPL = [0-9.]*' "$dir/llama-imatrix.log" | tail -1)"
echo "tessera eval perplexity on the same chunks: $("$T" eval perplexity -m "$dir/stories.gguf" \
  -f "$dir/calib.txt" -c 256 --chunks 100 -t "$threads" 2>/dev/null | grep -o 'PPL = [0-9.]*')"
PYTHONPATH="$gguf_py" /usr/bin/python3 - "$dir/st.imatrix" "$dir/ll.imatrix.gguf" <<'PY'
import sys, numpy as np, gguf
def load(p):
    d = {t.name: np.array(t.data, dtype=np.float64).ravel() for t in gguf.GGUFReader(p).tensors}
    return {n[:-8]: (d[n], d[n[:-8] + '.counts'][0]) for n in d if n.endswith('.in_sum2')}
a, b = load(sys.argv[1]), load(sys.argv[2])
both = sorted(set(a) & set(b))
rel = max(np.max(np.abs(a[n][0] / a[n][1] - b[n][0] / b[n][1]) / (b[n][0] / b[n][1])) for n in both)
print('imatrix entries: tessera %d, llama-imatrix %d (only tessera: %s); counts equal: %s; '
      'largest relative difference of a column mean square: %.1e'
      % (len(a), len(b), sorted(set(a) - set(b)), all(a[n][1] == b[n][1] for n in both), rel))
PY
"$T" eval perplexity -m "$dir/stories.gguf" -f "$dir/eval.txt" -c 256 --chunks 100 -t "$threads" \
  --save-logits "$dir/st.logits" >/dev/null 2>&1
"$bin/llama-quantize" "$dir/stories.gguf" "$dir/ll-q4_k_m.gguf" Q4_K_M >/dev/null 2>&1
"$bin/llama-quantize" --imatrix "$dir/st.imatrix" "$dir/stories.gguf" "$dir/ll-q4_k_m-im.gguf" Q4_K_M \
  >"$dir/llama-quantize-im.log" 2>&1
grep -o "loaded [0-9]* importance matrix entries.*" "$dir/llama-quantize-im.log" | sed 's/^/llama-quantize: /'
"$T" quantize "$dir/stories.gguf" "$dir/st-q4_k_m.gguf" --type q4_k_m >/dev/null 2>&1
"$T" quantize "$dir/stories.gguf" "$dir/st-q4_k_m-im.gguf" --type q4_k_m --imatrix "$dir/st.imatrix" >/dev/null 2>&1
"$T" quantize "$dir/stories.gguf" "$dir/st-q4_k_m-llim.gguf" --type q4_k_m --imatrix "$dir/ll.imatrix.gguf" >/dev/null 2>&1
for f in ll-q4_k_m ll-q4_k_m-im st-q4_k_m st-q4_k_m-im st-q4_k_m-llim; do
  echo "$f: $("$T" eval kl --base-logits "$dir/st.logits" -m "$dir/$f.gguf" -f "$dir/eval.txt" -t "$threads" 2>/dev/null | grep Mean)"
done
fi

if [ -z "${ONLY:-}" ] || [ "$ONLY" = 3 ]; then
echo "== 3. a model trained on Brown whose rows are whole 256-value blocks (the k-quants themselves)"
# Trained by `tessera train` on Brown from byte 4,000,001 on (disjoint from the evaluation and
# calibration parts); dim 256 and ffn 768, so every matrix row is whole Q4_K/Q5_K/Q6_K blocks and
# no type falls back. About 10 min of training on 2 cores.
tail -c +4000001 "$brown" >"$dir/train.txt"
[ -f "$dir/brown256.gguf" ] || "$T" train -f "$dir/train.txt" -o "$dir/brown256.gguf" --dim 256 \
  --layers 4 --heads 4 --kv-heads 4 --ffn 768 --ctx 256 --vocab-size 512 -b 8 --steps "${STEPS:-400}" \
  --eval-every 100 -t "$threads" -q | tail -2
table brown256 "$dir/brown256.gguf" 256 100
fi
