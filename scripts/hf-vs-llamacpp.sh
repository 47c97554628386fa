#!/usr/bin/env bash
# A synthetic Hugging Face checkpoint (scripts/make-hf-checkpoint.py) run four ways, greedy:
#   dir     tessera generate --model DIR
#   gguf    tessera generate --model OUT.gguf, after tessera convert DIR OUT.gguf
#   llama   llama.cpp's llama-simple on OUT.gguf (and llama-tokenize --ids on the prompt)
# per family x dtype x shard count and prompt; prints a table and exits 1 on any mismatch.
#
#   scripts/hf-vs-llamacpp.sh LLAMA_BIN_DIR|none
# env: TESSERA (default build/release/tessera), N (tokens, 24), FAMILIES ("llama mistral
# qwen2 qwen3"), DTYPES ("f32 f16 bf16"), SHARDS ("1 2"), or CASES ("llama:f32:1 qwen2:bf16:2 ...",
# instead of their product), KEEP=DIR (keep the files there).
# With "none" only dir vs gguf is compared (the ctest hf_script_dir_vs_gguf runs that).
#
# Columns: ids = the generated token ids of dir and gguf are equal (and their prompt ids);
# prompt = Tessera's prompt ids equal llama-tokenize's; text = llama-simple's output (it echoes
# the prompt tokens, then the continuation, each token as llama_token_to_piece renders it with
# special tokens shown) equals Tessera's prompt + generated ids rendered the same way from
# tokenizer.json (SentencePiece: U+2581 -> space, <0xNN> -> that byte; byte-level: GPT-2's
# alphabet -> bytes; added tokens -> their text). Exact bytes, no stripping. "f32=" (bf16 only):
# llama-simple on the bf16 file differs, and on the same weights widened to f32 (tessera quantize
# --type f32: exact) equals Tessera's text: llama.cpp's own bf16 arithmetic (activations rounded
# to bf16) took another near-tie, the file is right.
set -euo pipefail
cd "$(dirname "$0")/.."
llama_bin="${1:?usage: scripts/hf-vs-llamacpp.sh LLAMA_BIN_DIR|none}"
tessera="${TESSERA:-build/release/tessera}"
n="${N:-24}"
families="${FAMILIES:-llama mistral qwen2 qwen3}"
dtypes="${DTYPES:-f32 f16 bf16}"
shards="${SHARDS:-1 2}"
if [[ -n "${KEEP:-}" ]]; then
  work="$KEEP"
  mkdir -p "$work"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
prompts=("Once upon a time the robot" "Zoë painted the café walls")
use_llama=1
[[ "$llama_bin" == none ]] && use_llama=0

printf '%-8s %-5s %-6s %-28s %-4s %-7s %-6s %-5s %s\n' family dtype shards prompt gen ids prompt text note
cases="${CASES:-}"
if [[ -z "$cases" ]]; then
  for fam in $families; do
    for dt in $dtypes; do
      for sh in $shards; do cases+=" $fam:$dt:$sh"; done
    done
  done
fi
status=0
for c in $cases; do
      IFS=: read -r fam dt sh <<<"$c"
      d="$work/$fam-$dt-$sh"
      python3 scripts/make-hf-checkpoint.py "$d" --family "$fam" --dtype "$dt" --shards "$sh" \
        --seed 7 >/dev/null
      "$tessera" convert "$d" "$d.gguf" >/dev/null
      i=0
      for p in "${prompts[@]}"; do
        i=$((i + 1))
        "$tessera" generate -m "$d" -p "$p" -n "$n" --temperature 0 -t 1 --json 2>/dev/null \
          >"$d.dir.$i.json"
        "$tessera" generate -m "$d.gguf" -p "$p" -n "$n" --temperature 0 -t 1 --json 2>/dev/null \
          >"$d.gguf.$i.json"
        if ((use_llama)); then
          "$llama_bin/llama-simple" -m "$d.gguf" -n "$n" "$p" 2>/dev/null >"$d.llama.$i.txt"
          "$llama_bin/llama-tokenize" -m "$d.gguf" -p "$p" --ids --log-disable 2>/dev/null \
            | tail -n 1 >"$d.llama.$i.ids"
          # BF16: llama.cpp's CPU path rounds the activations to bf16 for its dot products (Tessera
          # keeps them f32), so near-ties of these random weights can fall the other way; the same
          # weights widened to f32 (exact) separate the file's correctness from that arithmetic.
          if [[ "$dt" == bf16 ]]; then
            [[ -f "$d-f32.gguf" ]] || "$tessera" quantize "$d.gguf" "$d-f32.gguf" --type f32 >/dev/null 2>&1
            "$llama_bin/llama-simple" -m "$d-f32.gguf" -n "$n" "$p" 2>/dev/null >"$d.llamaf32.$i.txt"
          else
            : >"$d.llamaf32.$i.txt"
          fi
        else
          : >"$d.llama.$i.txt"
          : >"$d.llama.$i.ids"
        fi
        if ! python3 - "$d" "$i" "$use_llama" "$fam" "$dt" "$sh" "$p" <<'EOF'
import json, re, sys
d, i, use_llama, fam, dt, sh, prompt = sys.argv[1:]
a = json.load(open(f"{d}.dir.{i}.json"))
b = json.load(open(f"{d}.gguf.{i}.json"))
tok = json.load(open(f"{d}/tokenizer.json", encoding="utf-8"))
pieces = {v: k for k, v in tok["model"]["vocab"].items()}
for t in tok["added_tokens"]:
    pieces[t["id"]] = t["content"]
special = {t["id"] for t in tok["added_tokens"]}
if tok["model"].get("byte_fallback"):
    def render(t):
        s = pieces[t]
        m = re.fullmatch(r"<0x([0-9A-F]{2})>", s)
        if m and t not in special:
            return bytes([int(m.group(1), 16)])
        return s.encode() if t in special else s.replace("\u2581", " ").encode()
else:
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, k = bs[:], 0
    for x in range(256):
        if x not in bs:
            bs.append(x); cs.append(256 + k); k += 1
    u2b = {chr(c): x for x, c in zip(bs, cs)}
    def render(t):
        return pieces[t].encode() if t in special else bytes(u2b[ch] for ch in pieces[t])
ids_ok = a["tokens"] == b["tokens"] and a["prompt_tokens"] == b["prompt_tokens"]
note = []
if not ids_ok:
    note.append(f"dir {a['prompt_tokens']}+{a['tokens']} gguf {b['prompt_tokens']}+{b['tokens']}")
prompt_ok = text_ok = "-"
if use_llama == "1":
    theirs = open(f"{d}.llama.{i}.ids").read().strip()
    prompt_ok = "same" if theirs == json.dumps(a["prompt_tokens"]) else "DIFFER"
    if prompt_ok != "same":
        note.append(f"prompt ids tessera {a['prompt_tokens']} llama-tokenize {theirs}")
    mine = b"".join(render(t) for t in a["prompt_tokens"] + a["tokens"]) + b"\n"
    got = open(f"{d}.llama.{i}.txt", "rb").read()
    text_ok = "same" if got == mine else "DIFFER"
    if text_ok != "same" and dt == "bf16":
        widened = open(f"{d}.llamaf32.{i}.txt", "rb").read()
        if widened == mine:
            text_ok = "f32="
            first = next(k for k in range(min(len(got), len(mine))) if got[k] != mine[k])
            note.append(f"llama.cpp's bf16 arithmetic differs from byte {first}; the file's "
                        "weights widened to f32 give llama-simple Tessera's text")
    if text_ok not in ("same", "f32="):
        note.append(f"tessera {mine!r} llama-simple {got!r}")
distinct = len(set(a["tokens"]))
print(f"{fam:<8} {dt:<5} {sh:<6} {prompt[:28]:<28} {len(a['tokens']):<4} "
      f"{'same' if ids_ok else 'DIFFER':<7} {prompt_ok:<6} {text_ok:<5} {distinct} distinct"
      + ("; " + "; ".join(note) if note else ""))
sys.exit(0 if ids_ok and prompt_ok != "DIFFER" and text_ok in ("same", "f32=", "-") else 1)
EOF
        then
          status=1
        fi
      done
done
exit $status
