# pypto_build-config-version.cmake: which version find_package(pypto_build <version>) finds.
#
# The version is read from the package's __init__.py, the one place it is written. A request
# `find_package(pypto_build X.Y)` is met by this version when it is not older and has the same
# major version, or the same major.minor while the major is 0 (a 0.x minor release may break
# the function's interface). A range `X.Y...Z` is met by any version inside it.

file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../__init__.py" _pypto_build_version_line
     REGEX "^__version__ = \"[^\"]+\"$" LIMIT_COUNT 1)
string(REGEX REPLACE "^__version__ = \"([^\"]+)\"$" "\\1" PACKAGE_VERSION
                     "${_pypto_build_version_line}")
unset(_pypto_build_version_line)

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(NOT PACKAGE_VERSION MATCHES "^([0-9]+)\\.([0-9]+)")
  set(PACKAGE_VERSION "unknown")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
  return()
endif()
set(_pypto_build_major "${CMAKE_MATCH_1}")
set(_pypto_build_minor "${CMAKE_MATCH_2}")

if(DEFINED PACKAGE_FIND_VERSION_RANGE)
  if(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MIN
     AND (PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX
          OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE"
              AND PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION_MAX)))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(NOT DEFINED PACKAGE_FIND_VERSION OR PACKAGE_FIND_VERSION STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION
       AND _pypto_build_major EQUAL PACKAGE_FIND_VERSION_MAJOR
       AND (NOT _pypto_build_major EQUAL 0 OR PACKAGE_FIND_VERSION_COUNT LESS 2
            OR _pypto_build_minor EQUAL PACKAGE_FIND_VERSION_MINOR))
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
unset(_pypto_build_major)
unset(_pypto_build_minor)
