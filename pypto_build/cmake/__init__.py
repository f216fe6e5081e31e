"""The CMake config package of pypto-build: ``find_package(pypto_build CONFIG)`` finds this
folder, and its ``pypto_add_kernels()`` runs the build engine from a CMake build.

scikit-build-core finds it through the ``cmake.root`` entry point, which names this package:
it sets ``pypto_build_ROOT`` to this folder for every project that lists pypto-build in its
``build-system.requires``. A plain CMake build passes the folder itself
(``-Dpypto_build_ROOT=$(python -m pypto_build.cmake)``). See ``docs/cmake.md``.
"""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path


def cmake_dir() -> Path:
    """The folder holding ``pypto_build-config.cmake``."""
    return Path(__file__).resolve().parent


def installed_cmake_dir() -> Path | None:
    """:func:`cmake_dir` of the pypto-build this interpreter imports without the working
    folder on its path (as ``python -P`` does), or None when only the working folder has one.

    ``python -m`` puts the working folder first on ``sys.path``; when this package was imported
    from there (a checkout), the installed one is looked up on the rest of the path."""
    if sys.flags.safe_path or not sys.path or not cmake_dir().is_relative_to(Path(sys.path[0])):
        return cmake_dir()
    spec = importlib.machinery.PathFinder.find_spec("pypto_build", sys.path[1:])
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(spec.submodule_search_locations[0]).resolve() / "cmake"
