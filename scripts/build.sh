#!/usr/bin/env bash
# Configures and builds one flavour of Tessera.
#   scripts/build.sh [release|asan|tsan|debug] [TARGET...]   (default: release, all targets)
#   -> build/<flavour>
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  debug)   args=(-DCMAKE_BUILD_TYPE=Debug) ;;
  asan)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DTESSERA_SANITIZE=address;undefined") ;;
  tsan)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=thread) ;;
  *) echo "unknown flavour '$flavour' (release, debug, asan, tsan)" >&2; exit 2 ;;
esac
jobs="${TESSERA_JOBS:-$(nproc)}"
cmake -S . -B "build/$flavour" -G Ninja "${args[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "build/$flavour" -j "$jobs" "${targets[@]}"
