#!/usr/bin/env bash
# Tessera's main job on an embedded default, on a fresh machine: install dependencies, build,
# then synthesize a SmolLM2-135M-shaped Q8_0 model (once, cached) and generate from it.
# Extra arguments go to `tessera demo` (see `build/release/tessera demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh release >/dev/null
exec build/release/tessera demo "$@"
