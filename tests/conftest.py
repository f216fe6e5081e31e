"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pypto_build.chip_build.toolchains import SimToolchain

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    """The repository checkout (samples/, docs/ and tests/programs/ live under it)."""
    return REPO_ROOT


@pytest.fixture
def sample_program(repo_root: Path) -> Path:
    """The program file of the moe_a2a sample package, the README's quick-start input."""
    return repo_root / "samples" / "moe_a2a" / "src" / "moe_a2a" / "pipelines.py"


@pytest.fixture(scope="session")
def sim() -> SimToolchain:
    """The sim toolchain over the host g++; a test that compiles is skipped without one."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not on PATH")
    return SimToolchain(Path(gxx))
