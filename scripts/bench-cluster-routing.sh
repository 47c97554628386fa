#!/usr/bin/env bash
# Prefix-affine vs round-robin routing across replicas on a real Slurm: the same Mooncake
# conversation trace (requests sharing 512-token prefix blocks) replayed through `tessera cluster`
# with each policy of ROUNDS in turn (alternate them, e.g. "prefix round-robin prefix round-robin",
# to see the machine's drift; one run). Each round: a fresh cluster with REPLICAS replicas kept up (--min-replicas = --max-replicas,
# so both policies spread over the same ones), `tessera bench serve` replays the trace through the
# router, and the replicas' own counters give the prefix-cache hit rate (hits / full blocks looked
# up). scripts/mooncake_prefix_bound.py gives the hit rates the hash ids allow with unlimited cache.
#   scripts/bench-cluster-routing.sh [N_REQUESTS] [TIME_SCALE]     (defaults: 2000, 4; REPLICAS=4,
#   BLOCK=16 replays each 512-token hash block as 16 tokens (prompts scaled alike, the sharing
#   kept; BLOCK=512 is the trace as recorded), MAX_IN=2048 clips prompts,
#   ROUNDS="prefix round-robin" the policies in order)
# Needs: build/release/tessera, slurm-wlm + munge (scripts/install-deps.sh), ../shared/traces.
# Run by hand (minutes); results go to docs/CLUSTER.md.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
SCALE=${2:-4}
BLOCK=${BLOCK:-16}
R=${REPLICAS:-4}
ROUNDS=${ROUNDS:-"prefix round-robin"}
T=$PWD/build/release/tessera
TRACE=${TESSERA_SHARED_DIR:-$PWD/../shared}/traces/mooncake/conversation_trace.jsonl
W=${TESSERA_BENCH_DIR:-$PWD/.cache/bench-cluster}
mkdir -p "$W"
[ -f "$TRACE" ] || { echo "no trace at $TRACE" >&2; exit 1; }
# A small model (11 M parameters: dim 384, 6 layers) so that at time scales 4-12 the replicas are
# busy but not saturated on two cores, and TTFT is mostly the prefill of the uncached part.
MODEL=$W/small-q8_0.gguf
[ -f "$MODEL" ] || "$T" synth --shape tiny --dim 384 --layers 6 --heads 6 --kv-heads 2 --ffn 1152 \
  --ctx 4096 --dtype q8_0 -o "$MODEL" >/dev/null

# R slurmd "nodes" on this host, one CPU each (oversubscribing its cores when R > nproc): one
# replica per node.
TESSERA_SLURM_NODES=$R scripts/slurm-local.sh start "$W/slurm-$R" >/dev/null
eval "$(scripts/slurm-local.sh env "$W/slurm-$R")"
trap 'scripts/slurm-local.sh stop "$W/slurm-$R" >/dev/null 2>&1 || true' EXIT

round() {  # round POLICY TAG
  local policy=$1 tag=$2 log=$W/cluster-$2.log
  "$T" cluster --name "b$tag" --model m="$MODEL" --port 0 --routing "$policy" \
    --min-replicas "$R" --max-replicas "$R" --replica-cap 64 --keep-alive -1 --suspend release --cpus-per-replica 1 \
    --mem-per-replica 1536 --replica-port-base $((19000 + RANDOM % 500 * 4)) --deadline 600 \
    --log-dir "$W/logs-$tag" --release-on-exit \
    --serve-arg=--ctx-size --serve-arg=4096 --serve-arg=--parallel --serve-arg=32 \
    --serve-arg=--kv-memory --serve-arg="${KV_MEMORY:-512M}" >"$log" 2>&1 &
  local pid=$!
  local url=""
  for _ in $(seq 1 100); do
    url=$(sed -n 's/.*routing on \(http:\/\/[0-9.:]*\).*/\1/p' "$log" | head -1)
    [ -n "$url" ] && break
    sleep 0.1
  done
  for _ in $(seq 1 600); do  # both replicas up
    [ "$(curl -s "$url/cluster/status" | /usr/bin/python3 -c 'import json,sys;print(json.load(sys.stdin)["models"][0]["replicas_up"])')" = "$R" ] && break
    sleep 0.1
  done
  "$T" bench serve --target "$url" --model m --tokenizer "$MODEL" --scenario trace --trace "$TRACE" --num-prompts "$N" --time-scale "$SCALE" \
    --trace-block-tokens "$BLOCK" --max-input-len "${MAX_IN:-2048}" --max-output-len 8 --out "$W/out-$tag" >"$W/bench-$tag.log" 2>&1 || {
    echo "bench failed ($tag):"; tail -5 "$W/bench-$tag.log"; }
  local hits=0 queries=0
  for target in $(curl -s "$url/cluster/targets" | /usr/bin/python3 -c 'import json,sys;[print(t) for g in json.load(sys.stdin) for t in g["targets"]]'); do
    local m
    m=$(curl -s "http://$target/metrics")
    hits=$((hits + $(echo "$m" | awk '/^tessera_prefix_cache_hits_total/ {s+=$2} END {printf "%d", s}')))
    queries=$((queries + $(echo "$m" | awk '/^tessera_prefix_cache_queries_total/ {s+=$2} END {printf "%d", s}')))
  done
  /usr/bin/python3 - "$W/out-$tag/summary.json" "$policy" "$hits" "$queries" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
hits, queries = int(sys.argv[3]), int(sys.argv[4])
rate = hits / queries if queries else 0.0
print(f"{sys.argv[2]:12s} requests {s.get('completed', s.get('n_ttft'))}  prefix hit rate {100*rate:5.1f}% "
      f"({hits}/{queries} blocks)  TTFT median {s['median_ttft_ms']:8.1f} ms  p99 {s.get('p99_ttft_ms', 0):8.1f} ms  "
      f"req/s {s['request_throughput']:.2f}")
PY
  kill -TERM $pid; wait $pid || true
}

echo "trace $TRACE: first $N requests, time scale $SCALE, blocks of $BLOCK tokens, prompts clipped to ${MAX_IN:-2048} tokens, $R replicas x 1 CPU on $(nproc) cores"
k=0
for policy in $ROUNDS; do
  k=$((k + 1))
  round "$policy" "$policy-$k"
done
