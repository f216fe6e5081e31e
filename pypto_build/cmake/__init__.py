"""The CMake config package of pypto-build: ``find_package(pypto_build CONFIG)`` finds this
folder, and its ``pypto_add_kernels()`` runs the build engine from a CMake build.

scikit-build-core finds it through the ``cmake.root`` entry point, which names this package:
it sets ``pypto_build_ROOT`` to this folder for every project that lists pypto-build in its
``build-system.requires``. A plain CMake build passes the folder itself
(``-Dpypto_build_ROOT=$(python -m pypto_build.cmake)``). See ``docs/cmake.md``.
"""

from __future__ import annotations

from pathlib import Path


def cmake_dir() -> Path:
    """The folder holding ``pypto_build-config.cmake``."""
    return Path(__file__).resolve().parent
