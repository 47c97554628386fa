#!/usr/bin/env bash
# Speculative decoding side by side: Tessera (`bench model --spec ...`, speculation off and on in
# one process) and llama.cpp's own speculative modes on the same GGUF files, same threads, in one
# run, the engines alternating which goes first each round. llama.cpp is built by you, outside
# this repository; pass the folder of its binaries (llama-lookup, llama-speculative-simple,
# llama-completion).
#   scripts/bench-spec-vs-llamacpp.sh LLAMA_BIN_DIR NGRAM_TARGET DRAFT_TARGET DRAFT_MODEL
# NGRAM_TARGET: the model for n-gram / prompt lookup decoding; DRAFT_TARGET and DRAFT_MODEL: the
# target and the draft for draft-model speculation (same vocabulary). Trained weights only: random
# weights accept nothing. ../shared/tools/mk_embedded.py makes TinyLlama-1.1B-shaped ones
# (docs/PERFORMANCE.md, "Speculative decoding", says how).
# Env: PROMPT (a text file; default: Tessera's built-in story to rewrite, written out by
# `tessera bench model --spec ngram --print-prompt`), N (tokens to generate, 200), K (draft
# tokens at most, 5), ROUNDS (3), THREADS (nproc), CTX (512).
# Prints a markdown table of medians over rounds: decode tokens/s after the first token (Tessera
# off and on; llama.cpp without speculation, and with its lookup / draft speculation) and the
# acceptance rates. Every llama.cpp run uses --no-mmap, so it is timed rather than the disk.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:?usage: $0 LLAMA_BIN_DIR NGRAM_TARGET DRAFT_TARGET DRAFT_MODEL}"
ngram_target="${2:?}"; draft_target="${3:?}"; draft_model="${4:?}"
n="${N:-200}"; k="${K:-5}"; rounds="${ROUNDS:-3}"; threads="${THREADS:-$(nproc)}"; ctx="${CTX:-512}"
tessera=build/release/tessera
[ -x "$tessera" ] || ./scripts/build.sh release >/dev/null
out=$(mktemp -d)
prompt="${PROMPT:-$out/prompt.txt}"
[ -n "${PROMPT:-}" ] || "$tessera" bench model -m "$ngram_target" --spec ngram --print-prompt > "$prompt"

# Tessera: one repetition (off and on) -> "off_tps on_tps acceptance"
tessera_run() {  # model, then --spec args
  local model=$1; shift
  "$tessera" bench model -m "$model" "$@" --spec-tokens "$k" -n "$n" -r 1 -t "$threads" \
    --spec-prompt "$prompt" --json > "$out/t.json"
  python3 - "$out/t.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
off = [r for r in j["runs"] if not r["speculative"]][0]
on = [r for r in j["runs"] if r["speculative"]][0]
assert j["greedy_outputs_identical"], "speculative greedy output differs from plain"
print(off["decode_tokens_per_second"], on["decode_tokens_per_second"], on["acceptance_rate"])
PY
}
# llama.cpp's speculative tools print "decoded N tokens in T seconds, speed: X t/s" and "accept = P%".
llama_spec_run() {  # tool, then args
  local tool=$1; shift
  "$bin/$tool" "$@" --no-mmap -f "$prompt" -n "$n" --temp 0 -t "$threads" -c "$ctx" \
    --spec-draft-n-max "$k" > "$out/l.txt" 2>&1
  local tps acc
  tps=$(grep -oE 'decoded +[0-9]+ tokens in +[0-9.]+ seconds, speed: +[0-9.]+' "$out/l.txt" | grep -oE '[0-9.]+$')
  acc=$(grep -oE '[[:space:]]accept += +[0-9.]+' "$out/l.txt" | grep -oE '[0-9.]+$')
  echo "$tps $(python3 -c "print($acc / 100)")"
}
# llama.cpp without speculation: llama-completion's eval (decode) rate.
llama_plain_run() {
  "$bin/llama-completion" -m "$1" --no-mmap -f "$prompt" -n "$n" --temp 0 -t "$threads" -c "$ctx" \
    -no-cnv --ignore-eos > "$out/p.txt" 2>&1 < /dev/null
  grep -E 'common_perf_print: +eval time' "$out/p.txt" | grep -oE '[0-9.]+ tokens per second' | grep -oE '^[0-9.]+'
}

declare -a rows
for round in $(seq 1 "$rounds"); do
  if (( round % 2 == 1 )); then order="t l"; else order="l t"; fi
  for who in $order; do
    if [ "$who" = t ]; then
      read -r t_ng_off t_ng_on t_ng_acc < <(tessera_run "$ngram_target" --spec ngram)
      read -r t_dm_off t_dm_on t_dm_acc < <(tessera_run "$draft_target" --draft-model "$draft_model")
    else
      l_ng_off=$(llama_plain_run "$ngram_target")
      read -r l_ng_on l_ng_acc < <(llama_spec_run llama-lookup -m "$ngram_target")
      l_dm_off=$(llama_plain_run "$draft_target")
      read -r l_dm_on l_dm_acc < <(llama_spec_run llama-speculative-simple -m "$draft_target" \
                                   -md "$draft_model" --spec-type draft-simple)
    fi
  done
  rows+=("$t_ng_off $t_ng_on $t_ng_acc $l_ng_off $l_ng_on $l_ng_acc $t_dm_off $t_dm_on $t_dm_acc $l_dm_off $l_dm_on $l_dm_acc")
  echo "round $round: ${rows[-1]}" >&2
done
printf '%s\n' "${rows[@]}" | python3 -c '
import statistics as st, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = lambda i: st.median(r[i] for r in rows)
rat = lambda a, b: st.median(r[a] / r[b] for r in rows)
print(f"| mode | Tessera off | Tessera on | on/off | accepted | llama.cpp off | llama.cpp on | on/off | accepted | Tessera on / llama.cpp on |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, b in (("n-gram (lookup)", 0), ("draft model", 6)):
    print(f"| {name} | {med(b):.2f} | {med(b+1):.2f} | {rat(b+1,b):.2f}x | {100*med(b+2):.0f}% | "
          f"{med(b+3):.2f} | {med(b+4):.2f} | {rat(b+4,b+3):.2f}x | {100*med(b+5):.0f}% | {rat(b+1,b+4):.2f}x |")
print(f"(decode tokens/s after the first token, medians over {len(rows)} rounds; ratios are medians of per-round ratios)")
'
rm -rf "$out"
