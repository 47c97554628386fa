#!/usr/bin/env bash
# Every test Tessera has, as CI runs them: install dependencies; Release build + all tests;
# ASan+UBSan build + all tests; TSan build + the engine and server tests (the threaded parts);
# the GGUF fuzzer for a short run.
#   scripts/test.sh            everything
#   scripts/test.sh quick      Release tests only
# Tests that need ../shared data skip with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
mode="${1:-all}"
jobs="${TESSERA_JOBS:-$(nproc)}"

echo "== release build and tests"
./scripts/build.sh release
ctest --test-dir build/release --output-on-failure -j "$jobs"
echo "== release tests with forced-scalar kernels"
TESSERA_FORCE_SCALAR=1 ctest --test-dir build/release --output-on-failure -j "$jobs" -L "kernel|model"
[ "$mode" = quick ] && exit 0

echo "== ASan + UBSan build and tests (the real-daemon tests, label daemon, ran in Release)"
./scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs" -LE daemon

echo "== TSan build and the engine, server and fleet tests"
# (The binary-level curl/npm integration tests run in the Release and ASan stages; fleet_tests'
# memory-tier checks read the resident set, which TSan's shadow memory distorts.)
./scripts/build.sh tsan engine_tests serve_http_tests serve_engine_tests serve_fleet_tests \
  fleet_manager_tests fleet_controller_tests cluster_controller_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build/tsan --output-on-failure -j "$jobs" -L "engine|server|fleet" -E "_integration$"

echo "== GGUF fuzzer (libFuzzer, clang)"
./scripts/fuzz.sh "${TESSERA_FUZZ_SECONDS:-60}"
echo "== all tests passed"
