# Layering (see ../shared/STYLE.md): each layer is one library (or a few, one per concept group)
# whose public include root holds only that layer's headers, reached as "tessera/<layer>/x.h".
# A target sees the headers of the layers it links, and no others, so an upward include fails to
# compile instead of waiting for review.
function(tessera_layer_include_root layer out_var)
  set(inc ${CMAKE_BINARY_DIR}/include/${layer})
  file(MAKE_DIRECTORY ${inc}/tessera)
  if(NOT EXISTS ${inc}/tessera/${layer})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${layer} ${inc}/tessera/${layer} SYMBOLIC)
  endif()
  set(${out_var} ${inc} PARENT_SCOPE)
endfunction()

# tessera_library(<target> LAYER <layer> SOURCES ... DEPS ... PRIVATE_DEPS ...)
function(tessera_library target)
  cmake_parse_arguments(L "" "LAYER" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  tessera_layer_include_root(${L_LAYER} inc)
  add_library(${target} STATIC ${L_SOURCES})
  target_include_directories(${target} PUBLIC ${inc})
  target_link_libraries(${target} PUBLIC ${L_DEPS} PRIVATE ${L_PRIVATE_DEPS})
  target_compile_options(${target} PRIVATE ${TESSERA_WARNINGS})
  tessera_unity(${target})
endfunction()

# Unity builds (TESSERA_UNITY, on by default): a target's sources are compiled in batches of
# TESSERA_UNITY_BATCH files, so the heavy headers (nlohmann-json, Boost.Beast/Asio, CLI11, fmt)
# are parsed and their templates instantiated once per batch instead of once per file (measured
# in docs/CI.md). Files with per-file flags (the SIMD kernels) are never batched (CMake leaves
# them out); a file whose file-local names clash with another's is marked
# SKIP_UNITY_BUILD_INCLUSION where its layer lists it.
function(tessera_unity target)
  if(TESSERA_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE ${TESSERA_UNITY_BATCH})
  endif()
endfunction()

function(tessera_layer name)
  tessera_library(tessera_${name} LAYER ${name} ${ARGN})
endfunction()
