#!/usr/bin/env bash
# Builds the GGUF fuzzer with clang (libFuzzer + ASan + UBSan) in build/fuzz/, writes a seed
# corpus and fuzzes for N seconds (default 60). Exits non-zero when the fuzzer finds a crash,
# leak, sanitizer report or broken round trip; the input is saved under build/fuzz/fuzz-artifacts/.
# Usage: scripts/fuzz.sh [seconds]   Env: TESSERA_FUZZ_BUILD_DIR, JOBS (default 2).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build="${TESSERA_FUZZ_BUILD_DIR:-$root/build/fuzz}"
jobs="${JOBS:-2}"

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" -j "$jobs" gguf_fuzzer gguf_seed_writer

corpus="$build/fuzz-corpus/gguf"
artifacts="$build/fuzz-artifacts/"
mkdir -p "$corpus" "$artifacts"
"$build/fuzz/gguf_seed_writer" "$corpus"

# -max_len covers the seeds (a few hundred bytes) with room to grow; -rss_limit_mb turns a
# runaway allocation into a reported failure rather than a hung machine.
"$build/fuzz/gguf_fuzzer" "$corpus" \
  -dict="$root/fuzz/gguf.dict" \
  -max_len=65536 \
  -max_total_time="$seconds" \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="$artifacts"
