# tfc_add_model(<target> SPEC <file.toml> [NAME <name>] [TARGET cpu|cuda]
#               [OPTIONS <tfc flags>...])
#
# Compiles a spec with tfc at build time (again whenever the spec or tfc
# changes) into <binary dir>/tfc_models/<target>/<name>.o, <name>.h and
# <name>.hpp (the C++ wrapper, tfc/model.hpp), adds
# the object to <target>, the header's folder to its include path and links
# it with tfc::runtime. NAME defaults to the spec file's name without its
# extension: `#include "<name>.h"`. Defined by find_package(tfc) and by the
# tfc source tree (add_subdirectory, FetchContent); docs/abi.md, "Use it
# from CMake".
# One line each: CMake wraps a message's paragraphs unless they start with
# a space; the call stack under it names the caller's line.
function(_tfc_add_model_error text)
  message(FATAL_ERROR " ${text}")
endfunction()

function(tfc_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SPEC;NAME;TARGET" "OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    _tfc_add_model_error("tfc_add_model(${target}): unknown arguments '${ARG_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT TARGET ${target})
    _tfc_add_model_error("tfc_add_model(${target}): no target '${target}' (add_executable or add_library it first)")
  endif()
  if(NOT ARG_SPEC)
    _tfc_add_model_error("tfc_add_model(${target}): needs SPEC <file.toml>")
  endif()
  get_filename_component(spec "${ARG_SPEC}" ABSOLUTE
                         BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${spec}")
    _tfc_add_model_error("tfc_add_model(${target}): SPEC '${ARG_SPEC}' does not exist (looked at ${spec})")
  endif()
  if(NOT ARG_NAME)
    get_filename_component(ARG_NAME "${spec}" NAME_WE)
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET cpu)
  endif()
  if(NOT ARG_TARGET MATCHES "^(cpu|cuda)$")
    _tfc_add_model_error("tfc_add_model(${target}): TARGET '${ARG_TARGET}' is not cpu or cuda")
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/tfc_models/${target}")
  set(object "${dir}/${ARG_NAME}.o")
  set(header "${dir}/${ARG_NAME}.h")
  set(cpp_header "${dir}/${ARG_NAME}.hpp")
  add_custom_command(
    OUTPUT "${object}" "${header}" "${cpp_header}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
    COMMAND tfc::tfc "${spec}" --target=${ARG_TARGET} ${ARG_OPTIONS}
            -o "${object}"
    DEPENDS "${spec}" tfc::tfc
    COMMENT "tfc: ${ARG_SPEC} -> ${ARG_NAME}.o, ${ARG_NAME}.h"
    VERBATIM)
  target_sources(${target} PRIVATE "${object}" "${header}")
  target_include_directories(${target} PRIVATE "${dir}")
  target_link_libraries(${target} PRIVATE tfc::runtime)
endfunction()
