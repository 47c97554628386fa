#!/usr/bin/env bash
# Does `tessera serve` with its defaults serve as well as hand-tuned settings, and how does it
# compare with llama.cpp's `llama-server` (built by you, outside this repository)? For each
# shape and stream count, in one pass (configurations in a rotating order, so the machine's
# drift falls on all of them):
#   tessera-defaults      tessera serve -m M (nothing else but port and threads)
#   tessera-pP-kvK        the sweep: --parallel P (SWEEP_PARALLEL, those within 4x of the streams)
#                         and --kv-blocks K (0: from the memory budget; "fit": what P sequences
#                         of 1.25 x (INPUT_LEN + OUTPUT_LEN) need, at least one CTX sequence),
#                         -c CTX as llama-server's slots
#   llama-defaults        llama-server -m M --no-mmap (its defaults)
#   llama-npS             llama-server -np S -c S x CTX --no-mmap
# each driven by `tessera bench serve` closed loop at S concurrent streams, max(PER_STREAM x S,
# MIN_PROMPTS) requests of INPUT_LEN synthetic words (~1.2 tokens each), OUTPUT_LEN tokens each
# (--ignore-eos), after a warm-up.
# Prints a markdown table per shape: median TTFT and output tokens/s of each, the best sweep
# setting, and the ratios the issue asks for (defaults vs best: TTFT <= 1.2x, output >= 0.9x).
#   scripts/bench-serve-defaults.sh /path/to/llama-server [out-dir]
# Env: SHAPES ("smollm2-135m tinyllama-1.1b"), DTYPE (q8_0), STREAMS ("1 16 64"), THREADS (nproc),
#      INPUT_LEN (128), OUTPUT_LEN (128), MIN_PROMPTS (16), PER_STREAM (2), SWEEP_PARALLEL ("1 4 16 64"),
#      SWEEP_KV ("0 fit"), CTX (1024, llama-server's context per slot with -np).
set -euo pipefail
cd "$(dirname "$0")/.."
llama_server="${1:?usage: $0 /path/to/llama-server [out-dir]}"
out="${2:-$HOME/.cache/tessera/bench/serve-defaults}"
shapes="${SHAPES:-smollm2-135m tinyllama-1.1b}"; dtype="${DTYPE:-q8_0}"
streams_list="${STREAMS:-1 16 64}"; threads="${THREADS:-$(nproc)}"
in_len="${INPUT_LEN:-128}"; out_len="${OUTPUT_LEN:-128}"; min_prompts="${MIN_PROMPTS:-16}"
per_stream="${PER_STREAM:-2}"
sweep_parallel="${SWEEP_PARALLEL:-1 4 16 64}"; sweep_kv="${SWEEP_KV:-0 fit}"; ctx="${CTX:-1024}"
tessera=build/release/tessera
[ -x "$tessera" ] || ./scripts/build.sh release >/dev/null
mkdir -p "$out"
port=18340

. scripts/lib/server.sh  # start/stop/health of servers (SERVER_PID)
trap stop_server EXIT

for shape in $shapes; do
  model="$HOME/.cache/tessera/bench/synth-$shape-$dtype.gguf"
  [ -f "$model" ] || "$tessera" synth --shape "$shape" --dtype "$dtype" --out "$model" >/dev/null
  name=$(basename "$model" .gguf)
  for s in $streams_list; do
    configs=(tessera-defaults llama-defaults "llama-np$s")
    for p in $sweep_parallel; do
      [ "$p" -le $((4 * s)) ] && [ $((4 * p)) -ge "$s" ] || continue
      for k in $sweep_kv; do configs+=("tessera-p$p-kv$k"); done
    done
    n=$((per_stream * s)); [ "$n" -ge "$min_prompts" ] || n=$min_prompts
    # Rotate the order by the stream count so no configuration always runs first.
    rot=$(( s % ${#configs[@]} ))
    ordered=("${configs[@]:$rot}" "${configs[@]:0:$rot}")
    for c in "${ordered[@]}"; do
      label="$shape-s$s-$c"
      case "$c" in
        tessera-defaults)
          "$tessera" serve -m "$model" --port "$port" -t "$threads" > "$out/$label.server.log" 2>&1 & ;;
        tessera-p*)
          p=${c#tessera-p}; p=${p%%-kv*}; k=${c##*-kv}
          if [ "$k" = fit ]; then
            k=$(( p * ((5 * (in_len + out_len) / 4 + 15) / 16) ))
            [ "$k" -ge $(( (ctx + 15) / 16 )) ] || k=$(( (ctx + 15) / 16 ))
          fi
          "$tessera" serve -m "$model" --port "$port" -t "$threads" --parallel "$p" \
            --kv-blocks "$k" -c "$ctx" > "$out/$label.server.log" 2>&1 & ;;
        llama-defaults)
          "$llama_server" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" --no-mmap \
            > "$out/$label.server.log" 2>&1 & ;;
        llama-np*)
          "$llama_server" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" --no-mmap \
            -np "$s" -c $((s * ctx)) > "$out/$label.server.log" 2>&1 & ;;
      esac
      SERVER_PID=$!
      wait_healthy "http://127.0.0.1:$port" 120
      "$tessera" bench serve --target "http://127.0.0.1:$port" --model "$name" --tokenizer "$model" \
        --no-progress --out "$out/$label" --scenario concurrency --concurrency "$s" -n "$n" \
        --warmup 2 --input-len "$in_len" --output-len "$out_len" --ignore-eos --seed 1 \
        > "$out/$label.txt" 2>&1 || echo "bench failed: $out/$label.txt" >&2
      stop_server
      echo "$label: $(grep -E '^throughput' "$out/$label.txt" || echo failed)"
    done
  done
done

python3 - "$out" "$shapes" "$streams_list" "$out_len" <<'PY'
import glob, json, os, sys
out, shapes, streams = sys.argv[1], sys.argv[2].split(), [int(s) for s in sys.argv[3].split()]
out_len = int(sys.argv[4])
for path in sorted(glob.glob(os.path.join(out, "*", "summary.json"))):
    x = json.load(open(path))
    if x["failed"] or x["total_output_tokens"] != out_len * x["completed"]:
        print(f"warning: {os.path.dirname(path)}: {x['failed']} failed, "
              f"{x['total_output_tokens'] / max(1, x['completed']):.1f} output tokens per request")
def load(label):
    try:
        with open(os.path.join(out, label, "summary.json")) as f:
            return json.load(f)
    except OSError:
        return None
for shape in shapes:
    print(f"\n### {shape}\n")
    print("| streams | tessera defaults: median TTFT ms / output tok/s | best sweep setting (by tok/s) "
          "| its TTFT / tok/s | defaults / best: TTFT, tok/s | defaults / lowest sweep TTFT "
          "| llama-server defaults | llama-server -np S | tessera defaults / llama-server: tok/s "
          "(defaults, -np S) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in streams:
        d = load(f"{shape}-s{s}-tessera-defaults")
        sweep = {}
        for path in glob.glob(os.path.join(out, f"{shape}-s{s}-tessera-p*", "summary.json")):
            label = os.path.basename(os.path.dirname(path))
            sweep[label.split(f"-s{s}-tessera-")[1]] = load(label)
        ld, ln = load(f"{shape}-s{s}-llama-defaults"), load(f"{shape}-s{s}-llama-np{s}")
        if not d or not sweep:
            print(f"| {s} | missing runs | | | | | | | |")
            continue
        best_k = max(sweep, key=lambda k: sweep[k]["output_throughput"])
        b = sweep[best_k]
        fmt = lambda x: f"{x['median_ttft_ms']:.0f} / {x['output_throughput']:.1f}" if x else "failed"
        ratio = lambda x: f"{d['output_throughput'] / x['output_throughput']:.2f}x" if x else "-"
        low = min(x["median_ttft_ms"] for x in sweep.values())
        print(f"| {s} | {fmt(d)} | {best_k} | {fmt(b)} | {d['median_ttft_ms'] / b['median_ttft_ms']:.2f}x, "
              f"{d['output_throughput'] / b['output_throughput']:.2f}x | {d['median_ttft_ms'] / low:.2f}x "
              f"| {fmt(ld)} | {fmt(ln)} | {ratio(ld)}, {ratio(ln)} |")
PY
