"""Model-package projects for the hatch hook's tests, and building them with hatchling's real
builders in-process (the hook is found through its installed ``hatch`` entry point)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hatchling.builders.sdist import SdistBuilder
from hatchling.builders.wheel import WheelBuilder

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SAMPLE = SAMPLES / "moe_a2a"
#: Variables that would change what the hook builds, cleared for every test.
_CLEARED = (
    "ASCEND_HOME_PATH",
    "ASCEND_TOOLKIT_HOME",
    "ASCEND_OPP_PATH",
    "PTO_ISA_ROOT",
    "PYPTO_CHIPS",
    "PYPTO_JOBS",
    "PYPTO_COMPILER_LAUNCHER",
    "PYPTO_REMOTE_CACHE_URL",
    "PYPTO_REMOTE_CACHE_FALLBACK_URL",
    "PYPTO_REMOTE_CACHE_READ_ONLY",
    "PYPTO_REMOTE_CACHE_TIMEOUT",
    "CXX",
    "HATCH_BUILD_NO_HOOKS",
    "HATCH_BUILD_HOOKS_ONLY",
)


def hook_environment(patch: pytest.MonkeyPatch, cache: Path, temp: Path) -> None:
    """A private compile cache and temporary directory, and the sim toolchain."""
    for name in _CLEARED:
        patch.delenv(name, raising=False)
    patch.setenv("PYPTO_CACHE_DIR", str(cache))
    patch.setenv("PYPTO_TOOLCHAIN", "sim")
    temp.mkdir(parents=True, exist_ok=True)
    patch.setattr(tempfile, "tempdir", str(temp))


def copy_sample(
    destination: Path, *, chips: tuple[str, ...] = ("a3", "a5"), sample: str = "moe_a2a"
) -> Path:
    """A copy of sample package ``sample`` at ``destination``; one written for a3 and a5 is
    built for ``chips``."""
    ignore = shutil.ignore_patterns("__pycache__", "_kernels")
    shutil.copytree(SAMPLES / sample, destination, ignore=ignore)
    pyproject = destination / "pyproject.toml"
    listed = ", ".join(f'"{chip}"' for chip in chips)
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(
        text.replace('chips = ["a3", "a5"]', f"chips = [{listed}]"), encoding="utf-8"
    )
    return destination


def edit(path: Path, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in the file ``path``."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not in {path} exactly once"
    path.write_text(text.replace(old, new), encoding="utf-8")


def build_wheel(
    project: Path,
    out: Path,
    version: str = "standard",
    builder: type[WheelBuilder] = WheelBuilder,
) -> Path:
    """Build ``project``'s wheel (``standard`` or ``editable``) into ``out`` with ``builder``
    (hatchling's, or the one of ``pypto_build.backend``)."""
    return Path(next(builder(str(project)).build(directory=str(out), versions=[version])))


def use_backend(project: Path) -> None:
    """Make ``project`` (a copy of a sample) build with ``pypto_build.backend`` and drop its
    hook table, as a package written for that backend does."""
    edit(
        project / "pyproject.toml",
        'build-backend = "hatchling.build"',
        'build-backend = "pypto_build.backend"',
    )
    edit(project / "pyproject.toml", "[tool.hatch.build.targets.wheel.hooks.pypto]\n", "")


def build_sdist(project: Path, out: Path) -> Path:
    return Path(next(SdistBuilder(str(project)).build(directory=str(out))))
