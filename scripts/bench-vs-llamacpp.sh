#!/usr/bin/env bash
# Side-by-side CPU benchmark: Tessera's `bench model` and llama.cpp's `llama-bench` on the same
# synthetic GGUF files, same thread count, in one run. llama.cpp is built by you, outside this
# repository; pass the path of its llama-bench binary.
#   scripts/bench-vs-llamacpp.sh /path/to/llama-bench [models-dir] [reps]
# Env: SHAPES (default "smollm2-135m tinyllama-1.1b"), DTYPES (default "f16 q8_0 q4_0 q4_K"),
#      THREADS (default: nproc), PP (512), TG (128).
# Prints one markdown table (tokens/s of both, ratio, Tessera's GB/s and MBU) and writes the raw
# JSON records to <models-dir>/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
llama_bench="${1:?usage: $0 /path/to/llama-bench [models-dir] [reps]}"
dir="${2:-$HOME/.cache/tessera/bench}"
reps="${3:-3}"
threads="${THREADS:-$(nproc)}"
pp="${PP:-512}"; tg="${TG:-128}"
shapes="${SHAPES:-smollm2-135m tinyllama-1.1b}"
dtypes="${DTYPES:-f16 q8_0 q4_0 q4_K}"
tessera=build/release/tessera
[ -x "$tessera" ] || ./scripts/build.sh release >/dev/null
mkdir -p "$dir/results"
"$tessera" bench machine --threads "$threads" --json > "$dir/results/machine.json"
for shape in $shapes; do
  for dtype in $dtypes; do
    model="$dir/synth-$shape-$dtype.gguf"
    [ -f "$model" ] || "$tessera" synth --shape "$shape" --dtype "$dtype" --out "$model"
    tag="$shape-$dtype"
    "$tessera" bench model -m "$model" -t "$threads" -p "$pp" -n "$tg" -r "$reps" \
      --machine "$dir/results/machine.json" --json > "$dir/results/tessera-$tag.json"
    "$llama_bench" -m "$model" -t "$threads" -p "$pp" -n "$tg" -r "$reps" -o json \
      > "$dir/results/llamacpp-$tag.json" 2>/dev/null
  done
done
python3 - "$dir/results" $shapes -- $dtypes <<'PY'
import json, sys, os
d = sys.argv[1]; args = sys.argv[2:]; sep = args.index('--')
shapes, dtypes = args[:sep], args[sep + 1:]
m = json.load(open(os.path.join(d, 'machine.json')))
env = m['environment']
print(f"machine: {env['cpu']} ({env['cpu_flags']}), tessera {env['commit']} {env['compiler']}, "
      f"ceilings {m['machine']['read_gbps']:.1f} GB/s read, {m['machine']['fma_gflops']:.0f} GFLOP/s f32 FMA")
print("| model | dtype | test | tessera t/s | llama.cpp t/s | ratio | tessera GB/s | MBU | GFLOP/s | MFU |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s in shapes:
    for t in dtypes:
        tag = f"{s}-{t}"
        ts = json.load(open(os.path.join(d, f"tessera-{tag}.json")))
        lc = json.load(open(os.path.join(d, f"llamacpp-{tag}.json")))
        lc_by = {}
        for r in lc:
            name = f"pp{r['n_prompt']}" if r['n_gen'] == 0 else f"tg{r['n_gen']}"
            lc_by[name] = (r['avg_ts'], r['stddev_ts'])
        for r in ts['results']:
            a, sa = r['tokens_per_second_mean'], r['tokens_per_second_stddev']
            b, sb = lc_by.get(r['test'], (float('nan'), 0))
            print(f"| {s} | {t} | {r['test']} | {a:.2f} ± {sa:.2f} | {b:.2f} ± {sb:.2f} | {a / b:.2f}x | "
                  f"{r['gbps']:.2f} | {100 * r['mbu']:.0f}% | {r['gflops']:.1f} | {100 * r['mfu']:.1f}% |")
PY
