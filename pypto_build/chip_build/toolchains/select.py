"""Turning the ``toolchain`` setting (a name of :mod:`.registry`, or ``auto``) into a toolchain
object."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pypto_build.chip_build.toolchains.base import Toolchain
from pypto_build.chip_build.toolchains.extra_flags import ExtraFlags
from pypto_build.chip_build.toolchains.kind import ToolchainRequest
from pypto_build.chip_build.toolchains.registry import AUTO, TOOLCHAINS, toolchain_kind
from pypto_build.chip_build.toolchains.target import TargetSettings


def select_toolchain(
    name: str,
    *,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    target: TargetSettings | None = None,
    sim_extra: ExtraFlags | None = None,
    cann_extra: ExtraFlags | None = None,
) -> Toolchain:
    """The toolchain ``name`` asks for.

    A named toolchain that is not usable is an error saying why (``cann`` without a toolkit
    lists every place searched); ``auto`` is the first toolchain of the registry found here,
    else its last (``cann`` when a toolkit is found, ``sim`` otherwise). ``target`` (the runtime
    and PTO-ISA the binaries are built for) applies to CANN builds only, which need a runtime
    root; the sim build needs nothing but our own headers. ``sim_extra`` and ``cann_extra`` are
    what the settings add to each toolchain's commands (:mod:`.extra_flags`).
    """
    request = ToolchainRequest(
        os.environ if environ is None else environ,
        home,
        target or TargetSettings(),
        sim_extra,
        cann_extra,
    )
    if name == AUTO:
        *tried, fallback = TOOLCHAINS
        for entry in tried:
            found = toolchain_kind(entry.name).select(request, AUTO)
            if found is not None:
                return found
        name = fallback.name
    chosen = toolchain_kind(name).select(request, name)
    assert chosen is not None, f"toolchain '{name}' returned nothing when named"
    return chosen
