# pypto_build-config.cmake: pypto-build for CMake projects (scikit-build-core or plain CMake).
#
#   find_package(pypto_build CONFIG REQUIRED)
#   pypto_add_kernels(<target>
#                     PROGRAMS <file>...
#                     [CHIPS <chip>...]
#                     [TOOLCHAIN auto|cann|sim]
#                     [DESTINATION <dir>])
#
# pypto_add_kernels() adds <target> (built by default) whose one custom command runs
# `pypto-build build` on the program files: lower, render one tree per chip, compile. The build
# engine writes a depfile naming every input it read (the programs, their external kernels, the
# builtin templates and headers), so the command runs again exactly when one of them changes.
# With DESTINATION, `cmake --install` puts each chip tree at <DESTINATION>/<chip>/ (sources,
# binaries, kernel_config.py files, manifest.json). Documented in docs/cmake.md.
#
# Result variables: pypto_build_VERSION (from the version file) and
# pypto_build_PYTHON_EXECUTABLE, the interpreter that runs the engine: FindPython's
# Python_EXECUTABLE (scikit-build-core points it at the build environment's interpreter), checked
# here to import the pypto-build this file belongs to.

if(CMAKE_VERSION VERSION_LESS 3.20)
  set(pypto_build_FOUND FALSE)
  set(pypto_build_NOT_FOUND_MESSAGE
      "pypto_build needs CMake 3.20 or newer (DEPFILE support); this is CMake ${CMAKE_VERSION}")
  return()
endif()
# find_package() gives this file its own policy scope; pypto_add_kernels() records these.
cmake_policy(VERSION 3.20...3.31)

include(CMakeFindDependencyMacro)
find_dependency(Python 3.11 COMPONENTS Interpreter)

# The interpreter must import this very package: another pypto-build (or none) would run a
# different engine than the one this file was found with. -P (as for the engine below): the
# working directory is no import path, so a pypto_build folder there cannot stand in.
execute_process(
  COMMAND "${Python_EXECUTABLE}" -P -m pypto_build.cmake
  RESULT_VARIABLE _pypto_build_status
  OUTPUT_VARIABLE _pypto_build_dir
  ERROR_VARIABLE _pypto_build_error
  OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_STRIP_TRAILING_WHITESPACE)
file(REAL_PATH "${CMAKE_CURRENT_LIST_DIR}" _pypto_build_here)
if(NOT _pypto_build_status EQUAL 0)
  set(pypto_build_FOUND FALSE)
  string(CONCAT pypto_build_NOT_FOUND_MESSAGE
         "Python_EXECUTABLE (${Python_EXECUTABLE}) cannot run pypto-build: "
         "${_pypto_build_error}\nSet Python_EXECUTABLE to the interpreter pypto-build is "
         "installed for.")
elseif(NOT _pypto_build_dir STREQUAL _pypto_build_here)
  set(pypto_build_FOUND FALSE)
  string(CONCAT pypto_build_NOT_FOUND_MESSAGE
         "Python_EXECUTABLE (${Python_EXECUTABLE}) imports the pypto-build at "
         "${_pypto_build_dir}, not the one found here (${_pypto_build_here}). Point "
         "Python_EXECUTABLE and pypto_build_ROOT at the same installation.")
else()
  set(pypto_build_PYTHON_EXECUTABLE "${Python_EXECUTABLE}")
endif()
unset(_pypto_build_status)
unset(_pypto_build_dir)
unset(_pypto_build_error)
unset(_pypto_build_here)

# pypto_add_kernels(<target> PROGRAMS <file>... [CHIPS <chip>...] [TOOLCHAIN <name>]
#                   [DESTINATION <dir>])
#
# PROGRAMS  program files (relative to the current source folder, or absolute), all inside
#           PROJECT_SOURCE_DIR: inputs are recorded relative to it.
# CHIPS     chips to build for (default: PYPTO_CHIPS from the environment, else every chip the
#           programs' builtins support). The CMake variable PYPTO_CHIPS (a list, or
#           comma-separated) overrides it: -C cmake.define.PYPTO_CHIPS=a3 with scikit-build-core.
# TOOLCHAIN auto, cann or sim (default: PYPTO_TOOLCHAIN from the environment, else auto); the
#           CMake variable PYPTO_TOOLCHAIN overrides it.
# DESTINATION  install folder of the chip trees (<DESTINATION>/<chip>/); without it nothing is
#           installed and the trees stay in ${CMAKE_CURRENT_BINARY_DIR}/pypto_build/<target>/kernels.
function(pypto_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TOOLCHAIN;DESTINATION" "PROGRAMS;CHIPS")
  if(DEFINED arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "pypto_add_kernels(${target}): unknown arguments: "
                        "${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(DEFINED arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "pypto_add_kernels(${target}): no value for "
                        "${arg_KEYWORDS_MISSING_VALUES}")
  endif()
  if(NOT arg_PROGRAMS)
    message(FATAL_ERROR "pypto_add_kernels(${target}): PROGRAMS names no program file")
  endif()

  set(programs "")
  foreach(program IN LISTS arg_PROGRAMS)
    cmake_path(ABSOLUTE_PATH program BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${program}" NORMALIZE inside)
    if(NOT inside)
      message(FATAL_ERROR "pypto_add_kernels(${target}): ${program} is not inside "
                          "PROJECT_SOURCE_DIR (${PROJECT_SOURCE_DIR})")
    elseif(NOT EXISTS "${program}" OR IS_DIRECTORY "${program}")
      message(FATAL_ERROR "pypto_add_kernels(${target}): no program file ${program}")
    endif()
    list(APPEND programs "${program}")
  endforeach()

  set(chips ${arg_CHIPS})
  if(NOT "${PYPTO_CHIPS}" STREQUAL "")
    string(REPLACE "," ";" chips "${PYPTO_CHIPS}")
  endif()
  set(toolchain "${arg_TOOLCHAIN}")
  if(NOT "${PYPTO_TOOLCHAIN}" STREQUAL "")
    set(toolchain "${PYPTO_TOOLCHAIN}")
  endif()
  set(options "")
  foreach(chip IN LISTS chips)
    list(APPEND options --chip "${chip}")
  endforeach()
  if(NOT toolchain STREQUAL "")
    list(APPEND options --toolchain "${toolchain}")
  endif()

  # The engine replaces the output folder as a whole, so the stamp and depfile live beside it.
  set(work "${CMAKE_CURRENT_BINARY_DIR}/pypto_build/${target}")
  set(out "${work}/kernels")
  set(stamp "${work}/build.stamp")
  set(depfile "${work}/build.d")
  add_custom_command(
    OUTPUT "${stamp}"
    COMMAND "${pypto_build_PYTHON_EXECUTABLE}" -P -m pypto_build build ${programs}
            --source-root "${PROJECT_SOURCE_DIR}" --out "${out}" ${options}
            --stamp "${stamp}" --depfile "${depfile}"
    DEPENDS ${programs}
    DEPFILE "${depfile}"
    COMMENT "pypto-build: building the kernels of ${target}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${stamp}")

  if(DEFINED arg_DESTINATION)
    # install(DIRECTORY) never strips, so device binaries stay as the toolchain wrote them. The
    # compile logs (pypto_build.tree_layout.LOG_DIR) are not part of a tree.
    install(DIRECTORY "${out}/" DESTINATION "${arg_DESTINATION}"
            PATTERN ".pypto-build-logs" EXCLUDE)
  endif()
endfunction()
