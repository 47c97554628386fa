#!/usr/bin/env bash
# Side-by-side CPU benchmark: Tessera's `bench model` and llama.cpp's `llama-bench` on the same
# synthetic GGUF files, same thread count, in one run. llama.cpp is built by you, outside this
# repository; pass the path of its llama-bench binary.
#   scripts/bench-vs-llamacpp.sh /path/to/llama-bench [models-dir] [reps]
# Env: SHAPES (default "smollm2-135m tinyllama-1.1b"), DTYPES (default "f16 q8_0 q4_0 q4_K"),
#      TESSERA_ISA (avx2 runs Tessera's AVX2 kernels on an AVX-512 machine: compare with a
#      llama.cpp built -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF),
#      THREADS (default: nproc), PP (512), TG (128), ROUNDS (default 1).
# Each model runs ROUNDS rounds, each round Tessera (reps repetitions, its ceilings measured just
# before) and llama-bench (reps repetitions), Tessera first in odd rounds and second in even
# ones, so the two runs of a round see nearly the same machine and neither engine always runs
# first; on a shared, noisy machine the per-round ratios and their median say more than one long
# run (ROUNDS=6 with reps 1 alternates the engines most finely).
# Prints one markdown table (medians over rounds: tokens/s of both, the ratio with its range,
# and for generation both engines' GB/s against two bandwidth figures: the best probe pass taken
# just before Tessera's run, and the probe passes adjacent to each run: Tessera's around each
# repetition, llama.cpp's one `bench machine` pass just before and one just after llama-bench),
# and for generation a drift-corrected ratio: each engine's tokens/s over the bandwidth its
# adjacent probe passes read, Tessera's over llama.cpp's (decode is bandwidth-bound, so this
# cancels most of the machine's minute-to-minute swings between the two runs of a round; the
# plain ratio is the measurement, the corrected one a reading aid). Writes the raw JSON records
# to <models-dir>/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
llama_bench="${1:?usage: $0 /path/to/llama-bench [models-dir] [reps]}"
dir="${2:-$HOME/.cache/tessera/bench}"
reps="${3:-3}"
threads="${THREADS:-$(nproc)}"
pp="${PP:-512}"; tg="${TG:-128}"; rounds="${ROUNDS:-1}"
shapes="${SHAPES:-smollm2-135m tinyllama-1.1b}"
dtypes="${DTYPES:-f16 q8_0 q4_0 q4_K}"
tessera=build/release/tessera
[ -x "$tessera" ] || ./scripts/build.sh release >/dev/null
mkdir -p "$dir/results"
for shape in $shapes; do
  for dtype in $dtypes; do
    model="$dir/synth-$shape-$dtype.gguf"
    [ -f "$model" ] || "$tessera" synth --shape "$shape" --dtype "$dtype" --out "$model"
    tag="$shape-$dtype"
    for round in $(seq 1 "$rounds"); do
      run_tessera() {
        "$tessera" bench model -m "$model" -t "$threads" -p "$pp" -n "$tg" -r "$reps" --json \
          > "$dir/results/tessera-$tag-r$round.json"
      }
      run_llama() {
        "$tessera" bench machine -t "$threads" --reps 1 --json > "$dir/results/probe-before-$tag-r$round.json"
        "$llama_bench" -m "$model" -t "$threads" -p "$pp" -n "$tg" -r "$reps" -mmp 0 -o json \
          > "$dir/results/llamacpp-$tag-r$round.json" 2>/dev/null
        "$tessera" bench machine -t "$threads" --reps 1 --json > "$dir/results/probe-after-$tag-r$round.json"
      }
      if [ $((round % 2)) -eq 1 ]; then run_tessera; run_llama; else run_llama; run_tessera; fi
    done
  done
done
python3 - "$dir/results" "$rounds" $shapes -- $dtypes <<'PY'
import json, sys, os, statistics as st
d = sys.argv[1]; rounds = int(sys.argv[2]); args = sys.argv[3:]; sep = args.index('--')
shapes, dtypes = args[:sep], args[sep + 1:]
first = json.load(open(os.path.join(d, f"tessera-{shapes[0]}-{dtypes[0]}-r1.json")))
env = first['environment']
print(f"machine: {env['cpu']} ({env['cpu_flags']}), {env['threads']} threads, tessera {env['commit']} "
      f"{env['compiler']}, kernels {env.get('kernel_isa', '?')}; {rounds} round(s) per model, medians over rounds")
print("| model | dtype | test | tessera t/s | llama.cpp t/s | ratio (min-max) | best probe GB/s | tessera GB/s (% best probe, % adjacent) | llama.cpp GB/s (% best probe, % adjacent) | drift-corrected ratio (min-max) |")
print("|---|---|---|---|---|---|---|---|---|---|")
med = st.median
for s in shapes:
    for t in dtypes:
        tag = f"{s}-{t}"
        rows = {}
        for r in range(1, rounds + 1):
            ts = json.load(open(os.path.join(d, f"tessera-{tag}-r{r}.json")))
            lc = {(f"pp{x['n_prompt']}" if x['n_gen'] == 0 else f"tg{x['n_gen']}"): x['avg_ts']
                  for x in json.load(open(os.path.join(d, f"llamacpp-{tag}-r{r}.json")))}
            probe = ts['machine']['read_gbps']
            around = [json.load(open(os.path.join(d, f"probe-{w}-{tag}-r{r}.json")))['machine']['read_gbps']
                      for w in ('before', 'after')]
            lc_adjacent = sum(around) / 2
            for x in ts['results']:
                a, b = x['tokens_per_second_mean'], lc.get(x['test'], float('nan'))
                per_token = x['bytes_per_run'] / x['n_tokens']
                lg = b * per_token / 1e9
                rows.setdefault(x['test'], []).append((a, b, a / b, probe, x['gbps'], lg,
                                                       x.get('mbu_adjacent_median', float('nan')),
                                                       lg / lc_adjacent))
        for test, v in rows.items():
            a, b, ratio, probe = med([x[0] for x in v]), med([x[1] for x in v]), med([x[2] for x in v]), med([x[3] for x in v])
            lo, hi = min(x[2] for x in v), max(x[2] for x in v)
            if test.startswith('tg'):
                tg_ = med([x[4] for x in v]); lg = med([x[5] for x in v])
                # Tessera's adjacent MBU over llama.cpp's = the ratio of tokens/s per adjacent GB/s.
                corr = [x[6] / x[7] for x in v]
                bw = (f"{probe:.1f} | {tg_:.1f} ({100 * med([x[4] / x[3] for x in v]):.0f}%, {100 * med([x[6] for x in v]):.0f}%)"
                      f" | {lg:.1f} ({100 * med([x[5] / x[3] for x in v]):.0f}%, {100 * med([x[7] for x in v]):.0f}%)"
                      f" | {med(corr):.2f}x ({min(corr):.2f}-{max(corr):.2f})")
            else:
                bw = "- | - | - | -"
            print(f"| {s} | {t} | {test} | {a:.2f} | {b:.2f} | {ratio:.2f}x ({lo:.2f}-{hi:.2f}) | {bw} |")
PY
