"""Packages that offer their parts' names without importing every part up front.

A package such as :mod:`pypto_build.chip_build.toolchains` offers its parts under one name
(``from pypto_build.chip_build.toolchains import SimToolchain``), but importing one small part of
it (the toolchain names ``--help`` lists) must not load every toolchain: ``pypto-build
--version`` and the import of the hatchling hook must not pay for the engine. Such a package
keeps its exports in a module of their own (``public``) and imports it the first time one of its
names is read (PEP 562); type checkers read the same module through a ``TYPE_CHECKING`` import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_package(package: str, public: str) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package``, whose names are those of module ``public``."""

    def __getattr__(name: str) -> object:
        try:
            return getattr(importlib.import_module(public), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
