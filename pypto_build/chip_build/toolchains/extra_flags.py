"""What a user adds to a toolchain's compile commands: defines, flags and, for the sim toolchain,
a debug build.

The settings ``sim-defines``/``sim-cxxflags``, ``cann-defines``/``cann-cxxflags`` and
``build-type`` (:mod:`pypto_build.plugin.settings`), and ``$CXXFLAGS`` for the sim toolchain as
host build tools read it, become one :class:`ExtraFlags` per toolchain. A toolchain puts them
into the command lines it plans, after its own flags (a later ``-O`` wins, as with CMake's
``CMAKE_CXX_FLAGS``), so the compile cache, which keys on those command lines, tells the builds
apart, and the build record (:func:`pypto_build.build_records.record.toolchain_description`)
sees them through the toolchain's ``layout``. With nothing added every command line is
byte-identical to one without this module.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pypto_build.chip_build.toolchains.base import ToolchainError

BuildType = Literal["release", "debug"]
#: What the host compiler's environment variable adds to a sim compile, as ``make``'s implicit
#: rules and CMake's first configure take it.
CXXFLAGS_VARIABLE = "CXXFLAGS"


@dataclass(frozen=True)
class ExtraFlags:
    """Defines and flags added to one toolchain's compiles."""

    #: ``NAME`` or ``NAME=VALUE``, each passed as ``-D<define>``.
    defines: tuple[str, ...] = ()
    #: Flags passed to every compile (and, for the sim toolchain, to its link: sanitizers and
    #: profilers need both).
    flags: tuple[str, ...] = ()
    #: The sim toolchain's optimization: ``debug`` compiles ``-O0 -g`` and keeps asserts.
    build_type: BuildType = "release"

    @property
    def debug(self) -> bool:
        return self.build_type == "debug"

    def compile_args(self) -> tuple[str, ...]:
        """What goes after the toolchain's own flags in a compile command."""
        return (*(f"-D{define}" for define in self.defines), *self.flags)

    def describe(self) -> dict[str, object]:
        """The additions, for the build record; empty when there are none."""
        described: dict[str, object] = {}
        if self.defines:
            described["defines"] = list(self.defines)
        if self.flags:
            described["flags"] = list(self.flags)
        if self.debug:
            described["build_type"] = self.build_type
        return described


def sim_flags(
    defines: tuple[str, ...],
    cxxflags: str | None,
    build_type: BuildType,
    environ: Mapping[str, str],
) -> ExtraFlags:
    """The sim toolchain's additions: ``$CXXFLAGS`` (from ``environ``), then the
    ``sim-cxxflags`` setting, so a project's own flags come last."""
    text = environ.get(CXXFLAGS_VARIABLE, "")
    try:
        inherited = shlex.split(text)
    except ValueError as exc:
        raise ToolchainError(
            f"{CXXFLAGS_VARIABLE}={text!r} is not a list of flags ({exc}); quote as a shell does"
        ) from None
    flags = (*inherited, *shlex.split(cxxflags or ""))
    return ExtraFlags(defines, flags, build_type)


def cann_flags(defines: tuple[str, ...], cxxflags: str | None) -> ExtraFlags:
    """The CANN toolchain's additions (the device compiler's flags are upstream's, so no
    environment variable changes them)."""
    return ExtraFlags(defines, tuple(shlex.split(cxxflags or "")))
