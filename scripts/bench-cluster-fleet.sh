#!/usr/bin/env bash
# Multi-tenant efficiency of `tessera cluster` on a real Slurm: MODELS models, each fed one
# ServeGen client's arrivals (time-compressed), served by replicas that scale to zero after a
# keep-alive, against one always-on replica per model. The schedule comes from `tessera bench
# fleet --arrivals-out` (whose own always-on replay on one machine is printed too), the cluster
# replay from scripts/cluster_replay.py through the router, and the same schedule is simulated by
# `tessera sim --schedule` with this machine's measured costs and the cluster's measured cold
# start, side by side.
#   scripts/bench-cluster-fleet.sh          (about 10 minutes; an otherwise idle machine)
# Environment: W (work folder), MODELS (8), WINDOWS (36 ten-minute windows), TIME_SCALE (120),
# PEAK_RPS (2), KEEP_ALIVE (trace seconds, 600), SLO (TTFT seconds, 2), SERVEGEN.
set -euo pipefail
cd "$(dirname "$0")/.."
T=$PWD/build/release/tessera
W=${W:-$PWD/.cache/bench-cluster-fleet}
MODELS=${MODELS:-8}
WINDOWS=${WINDOWS:-36}
TIME_SCALE=${TIME_SCALE:-120}
PEAK_RPS=${PEAK_RPS:-2}
KEEP_ALIVE=${KEEP_ALIVE:-600}
SLO=${SLO:-2}
SERVEGEN=${SERVEGEN:-../shared/traces/servegen/language/m-large}
[ -x "$T" ] || { echo "build first: scripts/build.sh release" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W/models"
for i in $(seq 1 "$MODELS"); do
  "$T" synth --shape tiny --dtype q8_0 --seed "$i" --ctx 512 -o "$W/models/m$i.gguf" >/dev/null
done
echo "== schedule (and the single-machine always-on replay): tessera bench fleet"
"$T" bench fleet --models "$W/models" --servegen "$SERVEGEN" --windows "$WINDOWS" \
  --time-scale "$TIME_SCALE" --peak-rps "$PEAK_RPS" --prompt-tokens 16 --max-tokens 4 -t 2 \
  --policies always-on --ttft-slo "$SLO" --arrivals-out "$W/schedule.csv" --json >"$W/fleet.json"
KEEP=$(/usr/bin/python3 -c "print($KEEP_ALIVE / $TIME_SCALE)")

echo "== cluster: $MODELS models on $MODELS slurmd nodes, keep-alive $KEEP s replayed, TTFT SLO $SLO s"
TESSERA_SLURM_NODES=$MODELS scripts/slurm-local.sh start "$W/slurm" >/dev/null
eval "$(scripts/slurm-local.sh env "$W/slurm")"
trap 'kill $CPID 2>/dev/null || true; scripts/slurm-local.sh stop "$W/slurm" >/dev/null 2>&1 || true' EXIT
args=()
for i in $(seq 1 "$MODELS"); do args+=(--model "m$i=$W/models/m$i.gguf"); done
TESSERA_LOG=info "$T" cluster --name fleet "${args[@]}" --port 0 --max-replicas 1 --keep-alive "$KEEP" --suspend release \
  --cpus-per-replica 1 --mem-per-replica 512 --replica-port-base $((21000 + RANDOM % 400 * 16)) \
  --ttft-slo "$SLO" --log-dir "$W/logs" --release-on-exit --serve-arg=--ctx-size --serve-arg=512 \
  >"$W/cluster.log" 2>&1 &
CPID=$!
URL=""
for _ in $(seq 1 100); do
  URL=$(sed -n 's/.*routing on \(http:\/\/[0-9.:]*\).*/\1/p' "$W/cluster.log" | head -1)
  [ -n "$URL" ] && break
  sleep 0.1
done
/usr/bin/python3 scripts/cluster_replay.py "$W/schedule.csv" "$URL" "$SLO" >"$W/replay.json"
curl -s "$URL/cluster/status" >"$W/status.json"
COLD=$( (grep -o 'ready in [0-9.]* s' "$W/cluster.log" || true) | awk '{s+=$3; n++} END {printf "%.3f", n ? s/n : 1}')
echo "cluster cold start (sbatch to /health), mean over $( (grep 'ready in' "$W/cluster.log" || true) | wc -l) starts: $COLD s"

echo "== simulated: tessera sim --schedule with this machine's costs, cold start $COLD s"
"$T" bench model --model "$W/models/m1.gguf" -p 16 -n 4 -r 5 -t 1 --json >"$W/model.json"
"$T" bench resume --model "$W/models/m1.gguf" -r 3 -t 1 -p 16 --json >"$W/resume.json"
SPAN=$(/usr/bin/python3 -c "import json;print(json.load(open('$W/replay.json'))['span_s'] + 1)")
"$T" sim --schedule "$W/schedule.csv" --schedule-span "$SPAN" --bench-record "$W/model.json" \
  --resume-record "$W/resume.json" --resume-s "$COLD" --policy dedicated,keep-alive \
  --keep-alive "$KEEP" --ttft-slo "$SLO" --json "$W/sim.json" >"$W/sim.txt" 2>&1 || cat "$W/sim.txt"

/usr/bin/python3 - "$W" "$MODELS" <<'PY'
import json, sys
w, n = sys.argv[1], int(sys.argv[2])
rep = json.load(open(f"{w}/replay.json"))
st = json.load(open(f"{w}/status.json"))
rs = sum(m["replica_seconds"] for m in st["models"])
base = n * (rep["span_s"] + 1)
print(f"live cluster: {rep['requests']} requests, {rep['ok']} answered, replica-seconds {rs:.1f} vs "
      f"always-on {base:.1f} ({100 * (1 - rs / base):.1f}% fewer), TTFT SLO {rep['slo_s']} s met by "
      f"{100 * rep['slo_attainment']:.1f}%, TTFT p50 {rep['ttft_p50_s']:.3f} s p99 {rep['ttft_p99_s']:.3f} s, "
      f"scale-ups {sum(m['scale_ups'] for m in st['models'])}")
try:
    sim = json.load(open(f"{w}/sim.json"))
    for p in sim["policies"]:
        print(f"sim {p['policy']:10s}: accelerator-hours {p['accelerator_hours'] * 3600:.1f} s "
              f"({100 * p.get('savings_vs_dedicated', 0):.1f}% fewer than dedicated), SLO met "
              f"{100 * p['slo_attainment']:.1f}%, cold starts {p.get('cold_starts')}")
except Exception as e:  # noqa: BLE001
    print("sim: no result:", e)
PY
