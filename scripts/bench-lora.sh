#!/usr/bin/env bash
# LoRA serving throughput: 16 concurrent streams (closed loop) on one base model, the requests
# spread round-robin over 0 (base alone), 1, 8 or 32 distinct adapters (rank 16 on all seven
# projections, random weights from scripts/make-peft-adapter.py), against `tessera serve --lora`
# and llama.cpp's `llama-server --lora ... --lora-init-without-apply` (its per-request "lora" field)
# on the same GGUF base and the same adapters (GGUF LoRA), same threads and slots, driven by the
# same client (`tessera bench serve --body-variants`). Rounds alternate the servers; the table gives
# each mix's median output tokens/s and its ratio to the base alone on that server.
#   scripts/bench-lora.sh LLAMA_SERVER [OUT_DIR] [ROUNDS]
# Env: BASE (a GGUF base model; default: a synthetic SHAPE/DTYPE one), SHAPE (tinyllama-1.1b),
#      DTYPE (q4_0), VOCAB (a vocab GGUF for the synthetic base), STD (0.02, adapter weights), RANK (16),
#      ADAPTER_DTYPE (f32; f16 or bf16: the adapters' A and B in that type, as PEFT saves a half-
#      precision fine-tune and llama.cpp's convert_lora_to_gguf.py writes by default), MIXES ("0 1 8 32"), CONCURRENCY (16),
#      PROMPTS (48), INPUT_LEN (64), OUTPUT_LEN (64), THREADS (nproc), ENGINES ("tessera llamacpp").
# On random weights llama-server fails requests whose output is not valid UTF-8 (its chat parser
# runs on /v1/completions too); a trained base avoids that: stories260K inside TinyLlama's shape,
#   GGUF_PY=.../gguf-py python3 ../shared/tools/mk_embedded.py body.gguf 0 &&
#   tessera quantize body.gguf base.gguf --type q4_0
# with small adapters (STD=0.002) so that the text stays text; the adapters cost the same work.
# Needs /usr/bin/python3 with numpy and llama.cpp's gguf-py (LLAMA_SERVER/../../gguf-py).
set -euo pipefail
cd "$(dirname "$0")/.."
llama_server=${1:?usage: $0 LLAMA_SERVER [OUT_DIR] [ROUNDS]}
out=${2:-/tmp/tessera-bench-lora}
rounds=${3:-2}
shape=${SHAPE:-tinyllama-1.1b}; dtype=${DTYPE:-q4_0}; rank=${RANK:-16}; adtype=${ADAPTER_DTYPE:-f32}
mixes=${MIXES:-"0 1 8 32"}; conc=${CONCURRENCY:-16}; prompts=${PROMPTS:-48}
in_len=${INPUT_LEN:-64}; out_len=${OUTPUT_LEN:-64}; threads=${THREADS:-$(nproc)}
engines=${ENGINES:-"tessera llamacpp"}
gguf_py=$(cd "$(dirname "$llama_server")/../.." && pwd)/gguf-py
T=build/release/tessera
mkdir -p "$out"
base=${BASE:-$out/base-$shape-$dtype.gguf}
# A real vocabulary (TinyLlama's SentencePiece one from ../shared when present): llama-server fails a
# request whose random output is not valid UTF-8 ("does not match the expected Content-only format").
vocab=${VOCAB:-../shared/tokenizers/ggml-vocab-llama-spm.gguf}
vocab_args=(); [ -f "$vocab" ] && vocab_args=(--vocab "$vocab")
[ -f "$base" ] || "$T" synth --shape "$shape" --dtype "$dtype" "${vocab_args[@]}" -o "$base" >/dev/null
name=$(basename "$base" .gguf)
read -r dim layers heads kv_heads ffn < <("$T" info "$base" --json | /usr/bin/python3 -c "
import json, sys; h = json.load(sys.stdin)['hparams']
print(h['dim'], h['n_layers'], h['n_heads'], h['n_kv_heads'], h['ffn_dim'])")
max_mix=0; for m in $mixes; do [ "$m" -gt "$max_mix" ] && max_mix=$m; done
ad=$out/adapters-$adtype  # the adapters of each dtype apart
mkdir -p "$ad"
for i in $(seq 1 "$max_mix"); do
  [ -f "$ad/a$i.gguf" ] && continue
  PYTHONPATH=$gguf_py /usr/bin/python3 scripts/make-peft-adapter.py "$ad/a$i" --dim "$dim" \
    --layers "$layers" --heads "$heads" --kv-heads "$kv_heads" --ffn "$ffn" --rank "$rank" \
    --alpha $((2 * rank)) --seed "$i" --std "${STD:-0.02}" --dtype "$adtype" \
    --targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj --gguf "$ad/a$i.gguf" >/dev/null
done
# Body variants per mix: Tessera names the adapter in "model"; llama-server takes a per-request
# "lora" list of (id, scale) over the adapters it loaded (ids in --lora order, 0-based).
for m in $mixes; do
  [ "$m" = 0 ] && continue
  : > "$out/tessera-mix$m.jsonl"; : > "$out/llamacpp-mix$m.jsonl"
  for i in $(seq 1 "$m"); do
    echo "{\"model\": \"$name:a$i\"}" >> "$out/tessera-mix$m.jsonl"
    echo "{\"lora\": [{\"id\": $((i - 1)), \"scale\": 1.0}]}" >> "$out/llamacpp-mix$m.jsonl"
  done
done
# The base alone: Tessera's requests name the base; llama-server's carry an empty "lora" list. (With
# adapters loaded, llama-server runs such a request, as one without the field, through every loaded
# adapter at scale 0 and pays for all of them: 12-15 tok/s here with 32 loaded, against 81 with
# none loaded, `MIXES=0`, which loads none.)
echo '{"model": "'"$name"'"}' > "$out/tessera-mix0.jsonl"
echo '{"lora": []}' > "$out/llamacpp-mix0.jsonl"

port=18360
. scripts/lib/server.sh  # start/stop/health of servers (SERVER_PID)
trap stop_server EXIT
start() {  # engine
  local args=()
  if [ "$1" = tessera ]; then
    for i in $(seq 1 "$max_mix"); do args+=(--lora "a$i=$ad/a$i"); done
    "$T" serve -m "$base" --port "$port" -t "$threads" --parallel "$conc" -c 512 "${args[@]}" \
      > "$out/tessera.log" 2>&1 &
  else
    for i in $(seq 1 "$max_mix"); do args+=(--lora "$ad/a$i.gguf"); done
    "$llama_server" -m "$base" --host 127.0.0.1 --port "$port" -t "$threads" -np "$conc" \
      -c $((conc * 512)) --no-mmap --lora-init-without-apply "${args[@]}" > "$out/llamacpp.log" 2>&1 &
  fi
  SERVER_PID=$!
  wait_healthy "http://127.0.0.1:$port" 120
}
# STALL_ONLY=1 skips the mixes and runs only the runtime-loading check below.
[ "${STALL_ONLY:-0}" = 1 ] && rounds=0
for r in $(seq 1 "$rounds"); do
  for e in $engines; do
    start "$e"
    for m in $mixes; do
      variants=(--body-variants "$out/$e-mix$m.jsonl")
      "$T" bench serve --target "http://127.0.0.1:$port" --model "$name" --tokenizer "$base" \
        --scenario concurrency --concurrency "$conc" -n "$prompts" --warmup 2 --input-len "$in_len" \
        --output-len "$out_len" --ignore-eos --seed "$r" --no-progress "${variants[@]}" \
        --out "$out/$e-mix$m-r$r" > "$out/$e-mix$m-r$r.txt" 2>&1
      tps=$(/usr/bin/python3 -c "import json; j = json.load(open('$out/$e-mix$m-r$r/summary.json')); print('%.1f' % j['output_throughput'], j['failed'])" 2>/dev/null || echo "? ?")
      echo "round $r $e adapters $m: output tokens/s ${tps% *} (failed ${tps#* })"
    done
    stop_server
  done
done | tee "$out/runs.txt"
[ "${STALL_ONLY:-0}" = 1 ] || /usr/bin/python3 - "$out/runs.txt" "$mixes" "$engines" <<'PY'
import re, statistics, sys
runs, mixes, engines = open(sys.argv[1]).read(), sys.argv[2].split(), sys.argv[3].split()
tps = {}
for e, m, v in re.findall(r"round \d+ (\S+) adapters (\d+): output tokens/s ([\d.]+)", runs):
    tps.setdefault((e, m), []).append(float(v))
print("| adapters in the mix | " + " | ".join(f"{e} tok/s | {e} vs its base" for e in engines) + " |")
print("|---" * (1 + 2 * len(engines)) + "|")
for m in mixes:
    cells = []
    for e in engines:
        v, b = tps.get((e, m)), tps.get((e, "0"))
        med = statistics.median(v) if v else float("nan")
        ratio = med / statistics.median(b) if v and b else float("nan")
        cells += [f"{med:.1f}", f"{ratio:.2f}x"]
    print(f"| {m or 'base'} | " + " | ".join(cells) + " |")
PY

# Runtime loading: 16 streams on the base while adapters load through POST /v1/adapters, one
# after another (--lora-dir); the inter-token gaps of the running requests against a run
# without loads (the loads parse files on the HTTP thread; the engine swaps them in between steps).
if [ "${STALL:-1}" = 1 ] && [[ " $engines " == *" tessera "* ]]; then
  for mode in quiet loading; do
    "$T" serve -m "$base" --port "$port" -t "$threads" --parallel "$conc" -c 512 --lora-dir "$ad" \
      > "$out/tessera-stall.log" 2>&1 &
    SERVER_PID=$!
    wait_healthy "http://127.0.0.1:$port" 120
    "$T" bench serve --target "http://127.0.0.1:$port" --model "$name" --tokenizer "$base" \
      --scenario concurrency --concurrency "$conc" -n "$conc" --warmup 0 --input-len 16 \
      --output-len 256 --ignore-eos --no-progress --out "$out/stall-$mode" > "$out/stall-$mode.txt" 2>&1 &
    bench=$!
    if [ $mode = loading ]; then
      sleep 4  # the streams are past their prefill and decoding
      for i in $(seq 1 "$max_mix"); do
        curl -s -o /dev/null -w "load a$i: HTTP %{http_code} in %{time_total} s\n" \
          "http://127.0.0.1:$port/v1/adapters" -d "{\"name\": \"r$i\", \"path\": \"$ad/a$i\"}"
      done
    fi
    wait $bench
    stop_server
    /usr/bin/python3 -c "
import json
j = json.load(open('$out/stall-$mode/summary.json'))
print('$mode: ITL p50 %.1f ms, p99 %.1f ms, max %.1f ms; TPOT p50 %.1f ms' % (j['p50_itl_ms'], j['p99_itl_ms'], j['max_itl_ms'], j['p50_tpot_ms']))"
  done | tee "$out/stall.txt"
fi
