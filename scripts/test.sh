#!/usr/bin/env bash
# Every test Tessera has, as CI runs them (docs/CI.md says what runs where, and why):
#   1. Release (GCC, -O3; what run.sh builds): build everything, run every test
#   2. the kernel and model tests again with forced-scalar kernels
#   3. ASan + UBSan (clang, -O1): every test but the real-daemon ones (label daemon), and in the
#      same build the libFuzzer targets, each fuzzed for a short run (while the TSan build starts)
#   4. TSan (clang, -O1): the engine, server, fleet and cluster-controller tests (the threaded parts)
# Every stage is timed; the times are printed as they end and in a table at the end.
#   scripts/test.sh            everything
#   scripts/test.sh quick      Release tests only
# Tests that need ../shared data skip with a message when it is absent.
# Env: TESSERA_JOBS (nproc), TESSERA_FUZZ_SECONDS (24: the GGUF fuzzer's time; the others get
# shares of it, scripts/fuzz.sh; a smoke run from the seed corpora, longer runs by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-all}"
jobs="${TESSERA_JOBS:-$(nproc)}"

t_start=$(date +%s)
t_stage=$t_start
stage_name=""
summary=()
end_stage() {
  [ -n "$stage_name" ] || return 0
  local now; now=$(date +%s)
  summary+=("$(printf '%-58s %5d s' "$stage_name" $((now - t_stage)))")
  echo "== $stage_name: $((now - t_stage)) s (total $((now - t_start)) s)"
  t_stage=$now
}
stage() { end_stage; stage_name="$*"; echo "== $stage_name"; }
print_summary() {
  end_stage
  stage_name=""
  echo "== stage times"
  printf '%s\n' "${summary[@]}"
  printf '%-58s %5d s\n' "total" $(( $(date +%s) - t_start ))
}

trap 'status=$?; [ $status -eq 0 ] || { echo "== FAILED in stage: $stage_name"; print_summary; }' EXIT

stage "dependencies"
./scripts/install-deps.sh

# Test stages run one process per test binary (scripts/ctest-by-binary.py: a process per test
# case costs 0.1-0.3 s to start under the sanitizers, and there are ~1,300 cases). Builds do not
# run beside test stages (they did in cold run 7: the tests ran twice as long, and a wall-clock
# bound failed; docs/CI.md), only beside the fuzzers, which use one core.
stage "release build (GCC -O3, unity batches)"
./scripts/build.sh release
stage "release tests"
python3 scripts/ctest-by-binary.py build/release "$jobs"
stage "release tests with forced-scalar kernels (labels kernel, model)"
TESSERA_FORCE_SCALAR=1 python3 scripts/ctest-by-binary.py build/release "$jobs" -L "kernel|model"
if [ "$mode" = quick ]; then print_summary; exit 0; fi

stage "ASan+UBSan build (clang -O1; tests and fuzz targets)"
./scripts/build.sh asan
stage "ASan+UBSan tests (all but label daemon: the real-daemon tests run in Release)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  python3 scripts/ctest-by-binary.py build/asan "$jobs" -LE daemon
# The fuzzers run one process at a time, on one core: the TSan build takes the other, at the
# lowest priority (nice 19), and goes on alone once they are done.
stage "fuzzers (the ASan build's libFuzzer targets), the TSan build (clang -O1) beside them"
setsid nice -n 19 ./scripts/build.sh tsan engine_tests serve_http_tests serve_engine_tests \
  serve_fleet_tests fleet_manager_tests fleet_controller_tests cluster_controller_tests \
  >build/tsan-build.log 2>&1 &
tsan_build=$!
if ! TESSERA_FUZZ_BUILD_DIR="$PWD/build/asan" ./scripts/fuzz.sh "${TESSERA_FUZZ_SECONDS:-24}"; then
  kill -- "-$tsan_build" 2>/dev/null || true  # its own process group (setsid)
  exit 1
fi
stage "the rest of the TSan build (the threaded parts' tests)"
# (The binary-level curl/npm integration tests run in the Release and ASan stages; fleet_tests'
# memory-tier checks read the resident set, which TSan's shadow memory distorts.)
if ! wait "$tsan_build"; then
  tail -n 100 build/tsan-build.log
  exit 1
fi
tail -n 1 build/tsan-build.log
stage "TSan tests (labels engine, server, fleet)"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  python3 scripts/ctest-by-binary.py build/tsan "$jobs" -L "engine|server|fleet" -E "_integration$"
print_summary
echo "== all tests passed"
