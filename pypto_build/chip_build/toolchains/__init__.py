"""Toolchains that turn a rendered sub-build's sources into binaries: ``cann`` (the CANN device
compiler) and ``sim`` (the host compiler, for the simulation runtime), how they are found, what
a CANN build is built for (PyPTO's runtime and PTO-ISA), and the compiler launchers that can
front them. :mod:`.registry` lists the toolchains; each implements :class:`.base.Toolchain`
and :class:`.kind.ToolchainKind`, the only ways the front ends reach one.

Importing the package loads none of them: its names are read from :mod:`.public`, which is
imported when the first one is (:mod:`pypto_build.lazy_exports`)."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypto_build.chip_build.toolchains.public import *  # noqa: F403
else:
    from pypto_build.lazy_exports import lazy_package

    __getattr__ = lazy_package(__name__, "pypto_build.chip_build.toolchains.public")
