"""The toolchains, by the name the ``toolchain`` setting and ``--toolchain`` spell them: the one
list that the names, the setting's choices and documentation, the command line's choices and
``doctor``'s reports derive from.

An entry names the module whose ``KIND`` (a :class:`~.kind.ToolchainKind`) selects the toolchain
and reports on it; that module is imported only when a build selects the toolchain or ``doctor``
asks it, so listing the choices (``--help``) loads no toolchain. Adding a toolchain is one entry
here and that module.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypto_build.chip_build.toolchains.kind import ToolchainKind

#: The setting that selects the first toolchain found on this machine.
AUTO = "auto"


@dataclass(frozen=True)
class ToolchainEntry:
    """One toolchain: its name, how the settings reference describes it, where it lives."""

    name: str
    #: What it compiles with, as the ``toolchain`` setting's documentation says it.
    summary: str
    #: When ``auto`` selects it (``when a toolkit is found``); the last entry is ``auto``'s
    #: fallback and has none.
    found_when: str | None
    #: The module whose ``KIND`` selects it and reports on it.
    module: str


#: In the order ``auto`` tries them: the first one found is selected, else the last.
TOOLCHAINS = (
    ToolchainEntry(
        "cann",
        "the CANN device compiler; an error without a toolkit",
        "when a toolkit is found",
        "pypto_build.chip_build.toolchains.cann_kind",
    ),
    ToolchainEntry(
        "sim",
        "the host compiler, for the simulation runtime",
        None,
        "pypto_build.chip_build.toolchains.sim_kind",
    ),
)
#: Every value of the ``toolchain`` setting, ``auto`` first.
TOOLCHAIN_NAMES = (AUTO, *(entry.name for entry in TOOLCHAINS))


def _entry(name: str) -> ToolchainEntry:
    return next(entry for entry in TOOLCHAINS if entry.name == name)


def toolchain_kind(name: str) -> ToolchainKind:
    """The implementation of toolchain ``name`` (a name of :data:`TOOLCHAINS`)."""
    kind: ToolchainKind = importlib.import_module(_entry(name).module).KIND
    return kind


def names_text() -> str:
    """The names as a sentence lists them: ``auto, cann or sim``."""
    *first, last = TOOLCHAIN_NAMES
    return f"{', '.join(first)} or {last}"


def setting_doc() -> str:
    """The ``toolchain`` setting's documentation: each toolchain with its summary, then what
    ``auto`` selects."""
    *found, fallback = TOOLCHAINS
    auto = ", ".join(f"{entry.name} {entry.found_when}" for entry in found)
    described = ", ".join(f"'{entry.name}' ({entry.summary})" for entry in TOOLCHAINS)
    return f"How kernels are compiled: {described} or '{AUTO}' ({auto}, else {fallback.name})."
