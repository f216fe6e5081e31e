"""Turning the ``toolchain`` setting (``auto``, ``cann``, ``sim``) into a toolchain object."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pypto_build.chip_build.toolchains.base import Toolchain, ToolchainError
from pypto_build.chip_build.toolchains.cann import CannToolchain
from pypto_build.chip_build.toolchains.discovery import (
    CannToolkit,
    find_toolkit,
    resolve_pto_isa_root,
)
from pypto_build.chip_build.toolchains.sim import SimToolchain

ToolchainName = Literal["auto", "cann", "sim"]
TOOLCHAIN_NAMES: tuple[ToolchainName, ...] = ("auto", "cann", "sim")


def select_toolchain(
    name: ToolchainName,
    *,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    pto_isa_root: Path | None = None,
    extra_include_dirs: Sequence[Path] = (),
    orchestration_include_dirs: Sequence[Path] = (),
) -> Toolchain:
    """The toolchain ``name`` asks for.

    ``cann`` without a toolkit is an error listing every place searched; ``auto`` is ``cann``
    when a toolkit is found and ``sim`` otherwise. The include directories apply to CANN
    compiles only (the sim build needs nothing but our own headers).
    """
    environ = os.environ if environ is None else environ
    if name == "sim":
        return SimToolchain.discover(environ)
    search = find_toolkit(environ, home=home)
    if search.toolkit is None and name == "auto":
        return SimToolchain.discover(environ)
    toolkit = search.require()
    return CannToolchain(
        toolkit,
        pto_isa_root=_require_pto_isa_root(name, toolkit, pto_isa_root, environ),
        extra_include_dirs=extra_include_dirs,
        orchestration_include_dirs=orchestration_include_dirs,
    )


def _require_pto_isa_root(
    name: str, toolkit: CannToolkit, setting: Path | None, environ: Mapping[str, str]
) -> Path:
    root = resolve_pto_isa_root(setting, environ)
    if root is None:
        raise ToolchainError(
            f"toolchain '{name}' uses the CANN toolkit at {toolkit.root}, whose kernels include "
            "PTO-ISA headers, but no PTO-ISA root is configured: set tool.pypto.pto_isa_root or "
            "PTO_ISA_ROOT, or build with toolchain 'sim'"
        )
    return root
