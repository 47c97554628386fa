#!/usr/bin/env bash
# Greedy continuations of Tessera and llama.cpp's llama-simple on the same GGUF, per family, on
# files written by llama.cpp's own gguf-py (scripts/make-arch-gguf.py). Run by hand:
#   scripts/arch-vs-llamacpp.sh [TESSERA] [LLAMA_SIMPLE]
# (defaults: build/release/tessera, llama-simple found by scripts/lib/server.sh's llama_bin). Prints one
# line per family and prompt, "same" or "DIFFER" with both texts; exits 1 if any differ.
# llama-simple prints control and unknown tokens as their text (<s>, </s>, <unk>), Tessera's
# detokenizer prints nothing for them, so those three strings are removed from llama.cpp's text
# before comparing (random-weight models do emit them).
# mistral: llama.cpp has no "mistral" architecture (it converts Mistral 7B to "llama" and reads
# no window), so llama-simple runs the same weights written under "llama" while Tessera runs the
# "mistral" file (window 4096, longer than these runs: the window does not cut in).
# gemma2 / gemma3: window 8, so it cuts in within the prompt plus 32 generated tokens (gemma2:
# layer 0 local, layer 1 global; gemma3: 6 layers, 0-4 local with RoPE base 10000, 5 global
# with base 1e6 and linear scaling 8); gemma2's attention cap 1 (llama.cpp's default 50 would
# not bite on these weights; the final cap, 30, cannot change a greedy choice). Small
# embeddings (scaled by sqrt(dim) at run time) and larger matrices: with tied output, the
# defaults make every step repeat its input token, which any implementation would match.
# Gemma files have add_space_prefix false: llama-simple echoes "<s>" and the prompt unspaced.
set -euo pipefail
cd "$(dirname "$0")/.."
tessera="${1:-build/release/tessera}"
. scripts/lib/server.sh  # llama_bin: where llama.cpp's tools are
simple="${2:-$(llama_bin llama-simple)}"
py=(env PYTHONPATH=/work/peers/llama.cpp/gguf-py /usr/bin/python3 scripts/make-arch-gguf.py)
n=32
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

"$tessera" synth --shape tiny --vocab-size 1024 -o "$dir/vocab.gguf" 2>/dev/null
prompts=("Once upon a time" "The little dog ran to" "hello world")
status=0
for arch in llama qwen2 qwen3 qwen3-hd mistral phi3 gemma2 gemma3; do
  case "$arch" in
    qwen3-hd) args=(--arch qwen3 --dim 128 --heads 4 --kv-heads 2 --head-dim 64) ;;  # Q wider than dim
    gemma2) args=(--arch gemma2 --head-dim 64 --sliding-window 8 --attn-softcap 1
                  --embd-std 0.02 --scale 0.3) ;;
    gemma3) args=(--arch gemma3 --layers 6 --head-dim 64 --sliding-window 8 --rope-base 1000000
                  --rope-scale 8 --embd-std 0.02 --scale 0.3) ;;
    *) args=(--arch "$arch") ;;
  esac
  mine="$dir/$arch.gguf"
  theirs="$mine"
  if [[ "$arch" == mistral ]]; then
    "${py[@]}" "${args[@]}" --sliding-window 4096 --vocab-from "$dir/vocab.gguf" --out "$mine"
    theirs="$dir/$arch-as-llama.gguf"
    "${py[@]}" "${args[@]}" --as-llama --vocab-from "$dir/vocab.gguf" --out "$theirs"
  else
    "${py[@]}" "${args[@]}" --vocab-from "$dir/vocab.gguf" --out "$mine"
  fi
  for p in "${prompts[@]}"; do
    a="$("$tessera" generate -m "$mine" -p "$p" -n "$n" --temperature 0 -t 1 2>/dev/null | tr -d '\0')"
    # llama-simple echoes "<s>", a space (with a space prefix) and the prompt before the
    # continuation.
    b="$("$simple" -m "$theirs" -n "$n" "$p" 2>/dev/null | tr -d '\0')"
    b="${b#<s>}"
    b="${b# }"
    b="${b#"$p"}"
    b="${b//<s>/}"
    b="${b//<\/s>/}"
    b="${b//<unk>/}"
    if [[ "$a" == "$b" ]]; then
      printf '%-9s %-24s same  (%d bytes)\n' "$arch" "\"$p\"" "${#a}"
    else
      printf '%-9s %-24s DIFFER\n  tessera:   %q\n  llama.cpp: %q\n' "$arch" "\"$p\"" "$a" "$b"
      status=1
    fi
  done
done
exit $status
