#!/usr/bin/env bash
# Configures and builds one flavour of Tessera.
#   scripts/build.sh [release|asan|tsan|debug] [TARGET...]   (default: release, all targets)
#   -> build/<flavour>
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
compiler=""
shift || true
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  debug)   args=(-DCMAKE_BUILD_TYPE=Debug) ;;
  # Sanitizer builds with clang at -O1 with line tables only (-g1: file:line in every report).
  # Measured on one test file (docs/CI.md): GCC 12 -O1 -g1 ASan+UBSan 24.9 s, clang 14 11.9 s;
  # the sanitizers' own guidance is -O1, for the code under test; test code itself compiles at
  # -O0 (TESSERA_TEST_OPT, tests/CMakeLists.txt: half the time). The ASan build also builds the fuzz targets
  # (TESSERA_FUZZ_TARGETS), so scripts/fuzz.sh needs no build of its own.
  asan)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                 "-DTESSERA_SANITIZE=address;undefined" -DTESSERA_BUILD_BENCH=OFF
                 -DTESSERA_FUZZ_TARGETS=ON -DTESSERA_TEST_OPT=-O0)
           compiler=clang ;;
  tsan)    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                 -DTESSERA_SANITIZE=thread -DTESSERA_BUILD_BENCH=OFF -DTESSERA_TEST_OPT=-O0)
           compiler=clang ;;
  *) echo "unknown flavour '$flavour' (release, debug, asan, tsan)" >&2; exit 2 ;;
esac
jobs="${TESSERA_JOBS:-$(nproc)}"
# The test targets share a precompiled header (tests/CMakeLists.txt); ccache caches the files
# that use it only with these sloppiness settings (its manual, "Precompiled headers").
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros"
# Tests and microbenchmarks are on unless TESSERA_BUILD_TESTS=OFF (scripts/run.sh builds the
# binary alone, without GoogleTest installed).
if [ "${TESSERA_BUILD_TESTS:-ON}" = OFF ]; then
  args+=(-DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF)
else
  args+=(-DTESSERA_BUILD_TESTS=ON)
  case "$flavour" in release|debug) args+=(-DTESSERA_BUILD_BENCH=ON) ;; esac
fi
if [ "$compiler" = clang ]; then
  args+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
  # A build directory configured with another compiler (an older checkout's GCC sanitizer
  # builds) is started afresh: CMake cannot switch compilers in place.
  if [ -f "build/$flavour/CMakeCache.txt" ] &&
     ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "build/$flavour/CMakeCache.txt"; then
    rm -rf "build/$flavour"
  fi
fi
# ccache: paths under the source tree are hashed relative to it, so a clone in another folder
# (CI's) hits what an earlier build compiled.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake -S . -B "build/$flavour" -G Ninja "${args[@]}" >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "build/$flavour" -j "$jobs" "${targets[@]}"
