#!/usr/bin/env bash
# Every test Tessera has, as CI runs them (docs/CI.md says what runs where, and why):
#   1. Release (GCC, -O3; what run.sh builds): build everything, run every test
#   2. the kernel and model tests again with forced-scalar kernels
#   3. ASan + UBSan (clang, -O1): every test but the real-daemon ones (label daemon), and in the
#      same build the libFuzzer targets, each fuzzed for a short run
#   4. TSan (clang, -O1): the engine, server, fleet and cluster-controller tests (the threaded parts)
# The ASan build runs beside stages 1-2's tests and the TSan build beside stage 3's, at nice 19.
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

stage "dependencies"
./scripts/install-deps.sh

# Each build after the first starts at the lowest priority (nice 19) beside the test stage before
# it, taking the CPU time the tests leave idle (they wait on sockets, subprocesses and timers),
# and goes on alone once they are done. Test stages run one process per test binary
# (scripts/ctest-by-binary.py: a process per test case costs 0.1-0.3 s to start under the
# sanitizers, and there are ~1,300 cases).
background=()
in_background() {  # NAME LOG COMMAND...: runs COMMAND in its own process group
  local log="$2"; shift 2
  setsid nice -n 19 "$@" >"$log" 2>&1 &
  background+=("$!")
}
wait_background() {  # PID LOG: the build's status; its log's tail if it failed
  if ! wait "$1"; then
    tail -n 100 "$2"
    exit 1
  fi
  tail -n 1 "$2"
}
trap 'status=$?; for p in "${background[@]}"; do kill -- "-$p" 2>/dev/null || true; done
      [ $status -eq 0 ] || { echo "== FAILED in stage: $stage_name"; print_summary; }' EXIT

stage "release build (GCC -O3, unity batches)"
./scripts/build.sh release
if [ "$mode" != quick ]; then
  mkdir -p build
  in_background asan build/asan-build.log ./scripts/build.sh asan
  asan_build=$!
fi
stage "release tests${asan_build:+ (the ASan+UBSan build beside them)}"
python3 scripts/ctest-by-binary.py build/release "$jobs"
stage "release tests with forced-scalar kernels (labels kernel, model)"
TESSERA_FORCE_SCALAR=1 python3 scripts/ctest-by-binary.py build/release "$jobs" -L "kernel|model"
if [ "$mode" = quick ]; then print_summary; exit 0; fi

stage "the rest of the ASan+UBSan build (clang -O1; tests and fuzz targets)"
wait_background "$asan_build" build/asan-build.log
# The TSan build (the threaded parts' tests) goes beside the ASan tests and the fuzzers.
in_background tsan build/tsan-build.log ./scripts/build.sh tsan engine_tests serve_http_tests \
  serve_engine_tests serve_fleet_tests fleet_manager_tests fleet_controller_tests \
  cluster_controller_tests
tsan_build=$!
stage "ASan+UBSan tests (all but label daemon: the real-daemon tests run in Release), the TSan build beside them"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  python3 scripts/ctest-by-binary.py build/asan "$jobs" -LE daemon
# The fuzzers run one process at a time, on one core.
stage "fuzzers (the ASan build's libFuzzer targets), the TSan build beside them"
TESSERA_FUZZ_BUILD_DIR="$PWD/build/asan" ./scripts/fuzz.sh "${TESSERA_FUZZ_SECONDS:-24}"
stage "the rest of the TSan build"
# (The binary-level curl/npm integration tests run in the Release and ASan stages; fleet_tests'
# memory-tier checks read the resident set, which TSan's shadow memory distorts.)
wait_background "$tsan_build" build/tsan-build.log
stage "TSan tests (labels engine, server, fleet)"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  python3 scripts/ctest-by-binary.py build/tsan "$jobs" -L "engine|server|fleet" -E "_integration$"
print_summary
echo "== all tests passed"
