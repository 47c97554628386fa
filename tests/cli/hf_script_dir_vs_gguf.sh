#!/usr/bin/env bash
# CTest hf_script_dir_vs_gguf: checkpoints written by scripts/make-hf-checkpoint.py (the formats'
# own rules, Python standard library only) give the same greedy tokens loaded as a directory and
# through `tessera convert` -> GGUF, for each family, dtype and one or two shards.
# Usage: hf_script_dir_vs_gguf.sh TESSERA   (exit 77, a skip, without python3)
set -euo pipefail
if ! command -v python3 >/dev/null; then
  echo "SKIP: python3 is not installed (scripts/make-hf-checkpoint.py needs it)"
  exit 77
fi
TESSERA="$1" N=12 \
  CASES="llama:f32:1 llama:bf16:2 mistral:f16:2 qwen2:f32:2 qwen2:bf16:1 qwen3:f16:1" \
  exec bash "$(dirname "$0")/../../scripts/hf-vs-llamacpp.sh" none
