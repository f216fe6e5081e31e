"""The names of the toolchains, as the ``toolchain`` setting and ``--toolchain`` spell them.

A leaf, so that the command line can list the choices without loading a toolchain.
"""

from __future__ import annotations

from typing import Literal

ToolchainName = Literal["auto", "cann", "sim"]
TOOLCHAIN_NAMES: tuple[ToolchainName, ...] = ("auto", "cann", "sim")
