#!/usr/bin/env bash
# Greedy tokens with a LoRA adapter, Tessera against llama.cpp, on trained weights (stories260K as a
# llama GGUF, made by ../shared/tools/mk_embedded.py) and random adapters written by
# scripts/make-peft-adapter.py in PEFT's format and as a GGUF LoRA. For each adapter it prints the
# continuation from: llama.cpp's llama-completion --lora (the former `llama-cli -no-cnv`: this
# llama.cpp's llama-cli is chat-only), Tessera unmerged from the GGUF LoRA and from the PEFT
# directory (`tessera generate --lora`, the batched forward's adapter path), and Tessera on the
# merged model (`tessera lora merge`); SAME when Tessera's three 48-token continuations are equal
# and llama.cpp's 64-token one starts with them.
#
#   scripts/lora-vs-llamacpp.sh LLAMA_CPP_BUILD_BIN [WORKDIR]
#
# Needs /usr/bin/python3 with numpy and llama.cpp's gguf-py (taken from the peer's source tree,
# LLAMA_CPP_BUILD_BIN/../../gguf-py). Run by hand; not a CI test.
set -euo pipefail
bin=${1:?usage: lora-vs-llamacpp.sh LLAMA_CPP_BUILD_BIN [WORKDIR]}
dir=${2:-/tmp/tessera-lora-vs-llamacpp}
here=$(cd "$(dirname "$0")/.." && pwd)
T=$here/build/release/tessera
gguf_py=$(cd "$bin/../.." && pwd)/gguf-py
mkdir -p "$dir"

GGUF_PY=$gguf_py /usr/bin/python3 "$here/../shared/tools/mk_embedded.py" "$dir/base.gguf" >/dev/null
prompts=("Once upon a time" "Tom and Lily went to the park" "The little dog")
all=q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj
same=0
total=0
for spec in "1:8:16:0.05:$all" "2:16:32:0.1:$all" "3:4:8:0.2:q_proj,v_proj" "4:32:16:0.08:k_proj,o_proj,down_proj"; do
  IFS=: read -r seed rank alpha std targets <<<"$spec"
  a=$dir/a$seed
  PYTHONPATH=$gguf_py /usr/bin/python3 "$here/scripts/make-peft-adapter.py" "$a" --dim 64 --layers 5 \
    --heads 8 --kv-heads 4 --ffn 172 --rank "$rank" --alpha "$alpha" --std "$std" --seed "$seed" \
    --targets "$targets" --gguf "$a.gguf" >/dev/null
  "$T" lora merge "$dir/base.gguf" "$a.gguf" "$a-merged.gguf" >/dev/null
  echo "== adapter $seed: rank $rank, alpha $alpha, std $std, targets $targets"
  for p in "${prompts[@]}"; do
    ll=$("$bin/llama-completion" -m "$dir/base.gguf" --lora "$a.gguf" -p "$p" -n 64 --temp 0 \
      --no-mmap -no-cnv --no-warmup -t 2 2>/dev/null | head -c 4096)
    ll=${ll#" "}     # llama-completion echoes the prompt after the BOS's space
    ll=${ll#"$p"}
    tg() { "$T" generate -m "$@" -p "$p" -n 48 --temperature 0 --json 2>/dev/null |
      /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['text'], end='')"; }
    t_gguf=$(tg "$dir/base.gguf" --lora "$a.gguf")
    t_peft=$(tg "$dir/base.gguf" --lora "$a")
    t_merged=$(tg "$a-merged.gguf")
    total=$((total + 1))
    # llama-completion holds back the last token or two of its output, so it generates 64 tokens and
    # Tessera's 48 must be a prefix of them (or equal, when both stopped at the end-of-text token).
    if [[ "$ll" == "$t_gguf"* && "$t_gguf" == "$t_peft" && "$t_peft" == "$t_merged" ]]; then
      same=$((same + 1)); echo "SAME  '$p' -> '${t_gguf//$'\n'/\\n}'"
    else
      echo "DIFF  '$p'"
      echo "  llama.cpp --lora GGUF : '$ll' (64 tokens)"
      echo "  tessera --lora GGUF   : '$t_gguf'"
      echo "  tessera --lora PEFT   : '$t_peft'"
      echo "  tessera merged        : '$t_merged'"
    fi
  done
done
echo "$same of $total continuations identical in all four"
