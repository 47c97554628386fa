# Compiler flags shared by every target. No -march=native: SIMD code is compiled per file
# (see kernels/) and chosen at run time, so one binary runs on any x86-64 CPU.
set(TESSERA_WARNINGS -Wall -Wextra -Wpedantic -Wno-unused-parameter)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND TESSERA_WARNINGS -Wshadow=local)
else()  # clang's name for the same warning (fuzz builds use clang)
  list(APPEND TESSERA_WARNINGS -Wshadow-uncaptured-local)
endif()

if(TESSERA_SANITIZE)
  string(REPLACE ";" "," _san "${TESSERA_SANITIZE}")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_san})
endif()

# libFuzzer builds (-DTESSERA_FUZZ=ON, clang only; see fuzz/ and scripts/fuzz.sh): every target
# gets coverage instrumentation plus ASan and UBSan; only the fuzz targets link libFuzzer's main.
if(TESSERA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TESSERA_FUZZ=ON needs clang (found ${CMAKE_CXX_COMPILER_ID}): "
                        "configure a separate build directory with CXX=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# TESSERA_FUZZ_TARGETS (CI's ASan+UBSan build, scripts/test.sh): the fuzz targets are built beside
# the tests in the same clang ASan+UBSan build, so the libraries are compiled once for both; only
# the libraries the fuzzers exercise get libFuzzer's coverage instrumentation
# (tessera_fuzz_coverage, called in fuzz/CMakeLists.txt), the tests of everything else run without it.
if(TESSERA_FUZZ_TARGETS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR NOT "address" IN_LIST TESSERA_SANITIZE)
    message(FATAL_ERROR "TESSERA_FUZZ_TARGETS=ON needs clang and TESSERA_SANITIZE with address")
  endif()
endif()
function(tessera_fuzz_coverage)
  if(TESSERA_FUZZ_TARGETS)
    foreach(t ${ARGN})
      target_compile_options(${t} PRIVATE -fsanitize=fuzzer-no-link)
    endforeach()
  endif()
endfunction()

# Asserts in hot paths stay on in release builds (TS_CHECK); NDEBUG only disables <cassert>.
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
