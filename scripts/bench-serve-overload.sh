#!/usr/bin/env bash
# Overload check for `tessera serve` with its defaults: STREAMS concurrent closed-loop streams
# (512) against a synthetic model, then the same with a small KV budget (KV_MEMORY, 256M) so
# running sequences outgrow the pool and are preempted. For each run it checks and prints:
# the server survived, every request was answered (completed, or refused with 429 and
# Retry-After: nothing lost or left hanging), the server's peak resident memory against its KV
# budget plus the weights, and the preemptions /metrics counted.
#   scripts/bench-serve-overload.sh [out-dir]
# Env: SHAPE (smollm2-135m), DTYPE (q8_0), STREAMS (512), PROMPTS (2 x STREAMS), INPUT_LEN (128),
#      OUTPUT_LEN (64), KV_MEMORY (256M), THREADS (nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-$HOME/.cache/tessera/bench/serve-overload}"
shape="${SHAPE:-smollm2-135m}"; dtype="${DTYPE:-q8_0}"; streams="${STREAMS:-512}"
prompts="${PROMPTS:-$((2 * streams))}"; in_len="${INPUT_LEN:-128}"; out_len="${OUTPUT_LEN:-64}"
kv_memory="${KV_MEMORY:-256M}"; threads="${THREADS:-$(nproc)}"
TESSERA=build/release/tessera; tessera=$TESSERA
. scripts/lib/server.sh
ensure_tessera
mkdir -p "$out"
model=$(synth_model "$shape" "$dtype")
name=$(basename "$model" .gguf)
status=0
trap stop_server EXIT

for mode in defaults small-kv; do
  flags=()
  [ "$mode" = small-kv ] && flags=(--kv-memory "$kv_memory")
  start_tessera_server "$out/$mode.server.log" -m "$model" -t "$threads" "${flags[@]}"
  pid=$SERVER_PID; port=$SERVER_PORT
  wait_healthy "http://127.0.0.1:$port" 60
  "$tessera" bench serve --target "http://127.0.0.1:$port" --model "$name" --tokenizer "$model" \
    --no-progress --out "$out/$mode" --scenario concurrency --concurrency "$streams" -n "$prompts" \
    --warmup 0 --input-len "$in_len" --output-len "$out_len" --ignore-eos --seed 1 \
    > "$out/$mode.txt" 2>&1 || true
  curl -s "http://127.0.0.1:$port/metrics" > "$out/$mode.metrics" || true
  alive=yes; kill -0 "$pid" 2>/dev/null || alive=no
  hwm_kib=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  stop_server
  python3 - "$out" "$mode" "$prompts" "$alive" "$hwm_kib" "$model" <<'PY' || status=1
import json, os, re, sys
out, mode, prompts, alive, hwm_kib, model = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
s = json.load(open(os.path.join(out, mode, "summary.json")))
metrics = open(os.path.join(out, mode + ".metrics")).read()
def metric(pattern):
    m = re.search(pattern, metrics, re.M)
    return float(m.group(1)) if m else 0.0
served = metric(r'^tessera_http_requests_total\{code="200",route="/v1/completions"\} (\S+)')
refused = metric(r'^tessera_http_requests_total\{code="429",route="/v1/completions"\} (\S+)')
preempted = metric(r'^tessera_preemptions_total\{[^}]*\} (\S+)')
log = open(os.path.join(out, mode + ".server.log")).read()
pool = re.search(r"KV pool ([0-9.]+) MiB", log)
pool_mib = float(pool.group(1)) if pool else 0.0
weights_mib = os.path.getsize(model) / 2**20
answered = s["completed"] + s["failed"]
ok = alive == "yes" and answered == prompts and served + refused == prompts and s["completed"] == served
print(f"{mode}: server alive {alive}; {prompts} requests: {s['completed']} served, {int(refused)} refused "
      f"with 429, {prompts - int(served + refused)} unanswered; {int(preempted)} preemptions; peak RSS "
      f"{hwm_kib / 1024:.0f} MiB (KV pool {pool_mib:.0f} MiB + weights {weights_mib:.0f} MiB); "
      f"median TTFT {s['median_ttft_ms']:.0f} ms, {s['output_throughput']:.1f} output tok/s"
      + ("" if ok else "  <-- FAILED"))
sys.exit(0 if ok else 1)
PY
done
exit $status
