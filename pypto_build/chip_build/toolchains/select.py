"""Turning the ``toolchain`` setting (``auto``, ``cann``, ``sim``) into a toolchain object."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pypto_build.chip_build.toolchains.base import Toolchain
from pypto_build.chip_build.toolchains.cann import CannToolchain
from pypto_build.chip_build.toolchains.discovery import find_toolkit
from pypto_build.chip_build.toolchains.extra_flags import ExtraFlags
from pypto_build.chip_build.toolchains.names import ToolchainName
from pypto_build.chip_build.toolchains.sim import SimToolchain
from pypto_build.chip_build.toolchains.target import TargetSettings, resolve_target


def select_toolchain(
    name: ToolchainName,
    *,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    target: TargetSettings | None = None,
    sim_extra: ExtraFlags | None = None,
    cann_extra: ExtraFlags | None = None,
) -> Toolchain:
    """The toolchain ``name`` asks for.

    ``cann`` without a toolkit is an error listing every place searched; ``auto`` is ``cann``
    when a toolkit is found and ``sim`` otherwise. ``target`` (the runtime and PTO-ISA the
    binaries are built for) applies to CANN builds only, which need a runtime root; the sim
    build needs nothing but our own headers. ``sim_extra`` and ``cann_extra`` are what the
    settings add to each toolchain's commands (:mod:`.extra_flags`).
    """
    environ = os.environ if environ is None else environ
    if name == "sim":
        return SimToolchain.discover(environ, sim_extra)
    search = find_toolkit(environ, home=home)
    if search.toolkit is None and name == "auto":
        return SimToolchain.discover(environ, sim_extra)
    toolkit = search.require()
    needed_by = f"toolchain '{name}' (the CANN toolkit at {toolkit.root})"
    resolved = resolve_target(target or TargetSettings(), environ, needed_by=needed_by)
    return CannToolchain(toolkit, resolved, cann_extra)
