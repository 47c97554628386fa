#!/usr/bin/env bash
# Validates the simulator against the live fleet on this machine (docs/SIMULATOR.md): a ServeGen
# slice is served live by `tessera bench fleet` (always-on, fixed keep-alive, adaptive; real
# engines, real suspend/resume), and the very same arrival schedule is then simulated with this
# machine's measured costs (`bench model` + `bench resume` records). Prints both side by side and
# the sim/live ratio of TTFT p50 and p99, SLO attainment, memory-seconds and cold starts, with the
# costs as measured and with their memory-bound terms fitted to the live run's device time
# (scripts/sim_validate_compare.py says why). Every request's TTFT lands in
# OUT/live-requests.csv and OUT/sim-requests-POLICY.csv.
#   scripts/sim-validate.sh            (about 10 minutes; run it on an otherwise idle machine)
# Environment: OUT (work folder), MODELS (4), WINDOWS (36 ten-minute windows), TIME_SCALE (120),
# PEAK_RPS (4), KEEP_ALIVE (600 trace seconds: fixed keep-alive, adaptive's fallback), SERVEGEN
# (the client folder), THREADS (2); SIM_ONLY=1 re-simulates the live run already in OUT;
# SIM_ARBITRATION=1 simulates the shared device with the live arbitration (`sim
# --device-arbitration`) instead of processor sharing.
set -euo pipefail
cd "$(dirname "$0")/.."
T=build/release/tessera
OUT=${OUT:-/tmp/tessera-sim-validate}
MODELS=${MODELS:-4}
WINDOWS=${WINDOWS:-36}
TIME_SCALE=${TIME_SCALE:-120}
PEAK_RPS=${PEAK_RPS:-4}
KEEP_ALIVE=${KEEP_ALIVE:-600}
SERVEGEN=${SERVEGEN:-../shared/traces/servegen/language/m-large}
THREADS=${THREADS:-2}
PROMPT=64
GEN=16
[ -x "$T" ] || { echo "build first: scripts/build.sh release" >&2; exit 1; }
[ -d "$SERVEGEN" ] || { echo "ServeGen traces not found at $SERVEGEN" >&2; exit 1; }
if [ "${SIM_ONLY:-0}" != 1 ]; then
rm -rf "$OUT" && mkdir -p "$OUT/models"
for i in $(seq 0 $((MODELS - 1))); do
  "$T" synth --shape smollm2-135m --dtype q8_0 --seed $((i + 1)) --out "$OUT/models/m$i.gguf" >/dev/null
done
echo "== this machine's costs"
"$T" bench model --model "$OUT/models/m0.gguf" -p $PROMPT -n $GEN -r 5 -t "$THREADS" --json >"$OUT/model.json"
"$T" bench resume --model "$OUT/models/m0.gguf" -r 5 -t "$THREADS" -p $PROMPT --json >"$OUT/resume.json"
echo "== live: tessera bench fleet"
"$T" bench fleet --models "$OUT/models" --servegen "$SERVEGEN" --windows "$WINDOWS" \
  --time-scale "$TIME_SCALE" --peak-rps "$PEAK_RPS" --keep-alive "$KEEP_ALIVE" --prompt-tokens $PROMPT --max-tokens $GEN \
  -t "$THREADS" --policies always-on,fixed,adaptive --warmup --arrivals-out "$OUT/schedule.csv" \
  --requests-out "$OUT/live-requests.csv" --iterations-out "$OUT/live-iterations.csv" --json >"$OUT/live.json"
fi
KEEP=$(python3 -c "import json;j=json.load(open('$OUT/live.json'));print(j['keep_alive_s']/j['time_scale'])")
BIN=$(python3 -c "print(60/$TIME_SCALE)")
SLO=$(python3 -c "import json;print(json.load(open('$OUT/live.json'))['ttft_slo_s'])")
ACTIVE=$(python3 -c "import json;j=json.load(open('$OUT/live.json'));print(j['policies'][0]['models'][0]['active_bytes'])")
SPAN=$(python3 -c "import json;j=json.load(open('$OUT/live.json'));print(j['policies'][0]['duration_s'])")
echo "== simulated: tessera sim --schedule (keep-alive $KEEP s, TTFT SLO $SLO s, $ACTIVE active bytes per model)"
python3 scripts/sim_validate_compare.py "$T" "$OUT" "$SPAN" "$ACTIVE" "$KEEP" "$BIN" "$SLO"
