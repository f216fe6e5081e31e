"""What a toolchain of the registry (:mod:`.registry`) implements besides compiling: being
selected from the settings, and reporting on this machine for ``doctor``.

The front ends (the hatch hook, ``pypto-build build`` and ``doctor``) reach a toolchain only
through this interface and :class:`~.base.Toolchain`, never by its name or class, so a new
toolchain needs no change there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pypto_build.chip_build.toolchains.base import Toolchain
from pypto_build.chip_build.toolchains.extra_flags import ExtraFlags
from pypto_build.chip_build.toolchains.target import TargetSettings


@dataclass(frozen=True)
class ToolchainRequest:
    """What the settings and the machine give a toolchain to be selected or to report with."""

    environ: Mapping[str, str]
    #: The home folder of per-user install roots (None: the user's).
    home: Path | None = None
    #: What a CANN build is built for (:mod:`.target`).
    target: TargetSettings = field(default_factory=TargetSettings)
    #: What the settings add to each toolchain's commands (:mod:`.extra_flags`).
    sim_extra: ExtraFlags | None = None
    cann_extra: ExtraFlags | None = None


@dataclass(frozen=True)
class DoctorSection:
    """What ``doctor`` reports of one toolchain."""

    #: Its keys of ``doctor --json``'s document.
    document: Mapping[str, Any]
    #: Its lines of ``doctor``'s text.
    lines: Sequence[str]
    #: Whether ``auto`` would select it on this machine.
    usable: bool


class ToolchainKind(Protocol):
    """A toolchain of the registry: how it is selected and how it reports."""

    def select(self, request: ToolchainRequest, requested: str) -> Toolchain | None:
        """The toolchain for ``request``, the ``toolchain`` setting being ``requested`` (its
        name or ``auto``). Under ``auto``, None when it is not found here (``auto`` tries the
        next); otherwise a :class:`~.base.ToolchainError` saying what is missing."""
        ...

    def doctor(self, request: ToolchainRequest, chips: Sequence[str]) -> DoctorSection:
        """What it finds on this machine for a build of ``chips``."""
        ...
