#!/usr/bin/env bash
# Two tessera binaries (before / after a change) alternating on the same models, `bench model`
# per round, one line per run (each the median of its repetitions): the CPU-speed-unchanged
# check of docs/PERFORMANCE.md ("The CPU path after the device decoder").
#   scripts/ab-binaries.sh OLD_TESSERA NEW_TESSERA MODEL.gguf... 
# ROUNDS (3), PP (64), TG (32), REPS (3); machine ceilings measured once (MACHINE_JSON to reuse).
set -euo pipefail
old="${1:?usage: $0 OLD_TESSERA NEW_TESSERA MODEL...}"; new="${2:?}"; shift 2
machine="${MACHINE_JSON:-$(mktemp)}"
[ -s "$machine" ] || "$new" bench machine --json > "$machine"
grep -m1 "model name" /proc/cpuinfo; grep -m1 -o "avx512f" /proc/cpuinfo || echo "no avx512f"
for m in "$@"; do
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for e in old new; do
      bin=$old; [ $e = new ] && bin=$new
      "$bin" bench model -m "$m" -p "${PP:-64}" -n "${TG:-32}" -r "${REPS:-3}" --no-adjacent-probe \
        --machine "$machine" --json 2>/dev/null |
        python3 -c "import json,sys; j=json.load(sys.stdin); print('$(basename "$m")','$e',$r,' '.join('%s=%.1f'%(x['test'],x['tokens_per_second_median']) for x in j['results']))"
    done
  done
done
