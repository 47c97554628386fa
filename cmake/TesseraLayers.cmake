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
endfunction()

function(tessera_layer name)
  tessera_library(tessera_${name} LAYER ${name} ${ARGN})
endfunction()
