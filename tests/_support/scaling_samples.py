"""The sample model package as the scaling tests build it: fresh copies, and the environment of
a build on "another machine" (its own home, temporary folder and compile cache)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "moe_a2a"
#: Compiles of the sample (chips a3 and a5) with the sim toolchain: the three kernels' command
#: lines do not depend on the chip, so they compile once and the other chip hits; the two
#: orchestrations compile once per chip.
SAMPLE_COMPILES = 5
SAMPLE_SOURCES = 8


def copy_sample(destination: Path) -> Path:
    """A copy of the sample package at ``destination``, without build output."""
    ignored = shutil.ignore_patterns("__pycache__", "_kernels", "build", "dist", "*.egg-info")
    shutil.copytree(SAMPLE, destination, ignore=ignored)
    return destination


def machine_environment(root: Path, **variables: str) -> dict[str, str]:
    """This process's environment without any ``PYPTO_*`` or toolkit variable, as a machine whose
    home, temporary folder and compile cache are under ``root``, plus ``variables``."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYPTO_", "ASCEND_", "SCCACHE_", "DISTCC_", "CCACHE_"))
        and name not in ("PTO_ISA_ROOT", "CXX", "NETRC")
    }
    for folder in ("home", "tmp"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    environ.update(
        HOME=str(root / "home"),
        TMPDIR=str(root / "tmp"),
        PYPTO_CACHE_DIR=str(root / "cache"),
        PYPTO_TOOLCHAIN="sim",
    )
    environ.update(variables)
    return environ
