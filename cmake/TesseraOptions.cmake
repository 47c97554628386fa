# Compiler flags shared by every target. No -march=native: SIMD code is compiled per file
# (see kernels/) and chosen at run time, so one binary runs on any x86-64 CPU.
set(TESSERA_WARNINGS -Wall -Wextra -Wpedantic -Wno-unused-parameter -Wshadow=local)

if(TESSERA_SANITIZE)
  string(REPLACE ";" "," _san "${TESSERA_SANITIZE}")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_san})
endif()

# Asserts in hot paths stay on in release builds (TS_CHECK); NDEBUG only disables <cassert>.
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
