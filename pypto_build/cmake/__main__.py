"""``python -m pypto_build.cmake``: print the CMake package folder, for plain CMake builds
(``-Dpypto_build_ROOT=...`` or ``CMAKE_PREFIX_PATH``), as ``pybind11 --cmakedir`` does."""

from pypto_build.cmake import cmake_dir

print(cmake_dir())
