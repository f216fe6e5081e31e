"""``python -m pypto_build.cmake``: print the CMake package folder, for plain CMake builds
(``-Dpypto_build_ROOT=...`` or ``CMAKE_PREFIX_PATH``), as ``pybind11 --cmakedir`` does.

It prints the folder of the pypto-build that this interpreter imports when the working folder
is not on the import path: the one ``pypto_build-config.cmake`` checks the interpreter against
(with ``python -P``). Run from a checkout of pypto-build, ``-m`` would otherwise import the
checkout's package and print a folder that check refuses, while another pypto-build is
installed.
"""

from __future__ import annotations

import sys

from pypto_build.cmake import installed_cmake_dir

folder = installed_cmake_dir()
if folder is None:
    sys.exit(
        f"pypto-build is not installed for {sys.executable} (only the pypto_build folder in the "
        "working folder was found); install it, e.g. pip install ., and run this again"
    )
print(folder)
