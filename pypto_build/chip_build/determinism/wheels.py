"""``check-reproducible``: two wheel builds of a project must be byte-identical.

The project is copied to two different folders and each copy is built by
``python -m pip wheel --no-deps --no-build-isolation`` — pip, because pip is what builds a model
package's wheel for real — in a subprocess under one of the two variants of
:mod:`.environment`, which vary everything a build must not depend on: the project's path, the
working and temporary directories, ``PYTHONHASHSEED``, the locale, the time zone, the umask and
the job count, each build with an empty compile cache of its own. ``SOURCE_DATE_EPOCH`` is the
same for both (the caller's, else hatchling's own default), as a release would set it.

The builds run without isolation so that both use the build tools of this environment (the same
hatchling, the same pypto-build, the one that runs this check); the project's
``build-system.requires`` must therefore be installed here, which is checked first. The two
wheels are compared, and a difference reported, by :mod:`.wheel_diff`.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto_build.chip_build.determinism.environment import VARIANTS, Variant, run_varied
from pypto_build.chip_build.determinism.wheel_diff import WheelCheck, check_wheels, clear_report
from pypto_build.errors import PyptoError, PyptoUsageError
from pypto_build.files import atomic_write_text, read_regular

#: The archive timestamp both builds use when the caller sets none: hatchling's own default
#: (2020-02-02), so the wheels equal those a plain ``pip wheel`` makes.
DEFAULT_SOURCE_DATE_EPOCH = "1580601600"
#: Folders never copied with the project: version-control metadata stays (a version may come
#: from it); caches anywhere, and build output and environments at the top, go.
_SKIPPED_ANYWHERE = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
_SKIPPED_AT_TOP = frozenset({"build", "dist", ".venv", "venv", ".tox", ".nox"})
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class ReproducibleError(PyptoUsageError):
    """The check cannot run: no project there, or build tools missing from the environment."""


class WheelBuildFailed(PyptoError):
    """One of the two builds failed; the message holds the end of its output and the log."""


@dataclass(frozen=True)
class ReproducibleResult:
    """The outcome of :func:`check_reproducible`."""

    project: Path
    check: WheelCheck
    report_dir: Path

    @property
    def passed(self) -> bool:
        return self.check.passed

    def to_json(self) -> dict[str, Any]:
        return {
            "project": str(self.project),
            "report_dir": str(self.report_dir),
            **self.check.to_json(),
        }


def missing_build_requirements(project: Path) -> list[str]:
    """The distributions in ``project``'s ``build-system.requires`` that this environment does
    not have (by name; versions are not checked)."""
    pyproject = project / "pyproject.toml"
    try:
        document = tomllib.loads(read_regular(pyproject).decode("utf-8"))
    except FileNotFoundError:
        raise ReproducibleError(f"{project}: no pyproject.toml") from None
    except OSError as exc:
        raise ReproducibleError(f"{pyproject}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ReproducibleError(f"{pyproject}: not UTF-8 text; TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ReproducibleError(f"{pyproject}: {exc}") from None
    system = document.get("build-system", {})
    requires = system.get("requires", []) if isinstance(system, dict) else []
    if not isinstance(requires, list):
        raise ReproducibleError(f"{pyproject}: build-system.requires: expected a list")
    missing = []
    for requirement in requires:
        match = _REQUIREMENT_NAME.match(str(requirement))
        if match is None:
            continue
        try:
            importlib.metadata.distribution(match.group(1))
        except importlib.metadata.PackageNotFoundError:
            missing.append(match.group(1))
    return missing


def check_reproducible(
    project: Path,
    *,
    report_dir: Path,
    diffoscope: str | None,
    environ: Mapping[str, str] | None = None,
) -> ReproducibleResult:
    """Build ``project``'s wheel twice under varied conditions and compare the two (see the
    module). Raises :class:`ReproducibleError` when the check cannot run and
    :class:`WheelBuildFailed` when a build fails."""
    environ = os.environ if environ is None else environ
    missing = missing_build_requirements(project)
    if missing:
        raise ReproducibleError(
            f"{project}: build-system.requires names {', '.join(missing)}, which this "
            "environment lacks; check-reproducible builds without isolation, with the tools "
            f"installed here: pip install {' '.join(missing)}"
        )
    clear_report(report_dir)
    for variant in VARIANTS:
        _build_log(report_dir, variant).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="pypto-check-reproducible-") as scratch:
        workspace = Path(scratch)
        wheels = [
            _build_wheel(project, workspace / variant.name, variant, environ, report_dir)
            for variant in VARIANTS
        ]
        check = check_wheels(wheels[0], wheels[1], report_dir, diffoscope=diffoscope)
    return ReproducibleResult(project, check, report_dir)


def _copy_project(project: Path, destination: Path) -> None:
    top = project.resolve()

    def skipped(directory: str, names: Sequence[str]) -> list[str]:
        at_top = Path(directory).resolve() == top
        return [
            name
            for name in names
            if name in _SKIPPED_ANYWHERE
            or name.endswith(".egg-info")
            or (at_top and name in _SKIPPED_AT_TOP)
        ]

    shutil.copytree(project, destination, symlinks=True, ignore=skipped)


def _build_log(report_dir: Path, variant: Variant) -> Path:
    return report_dir / f"{variant.name}-build.log"


def _build_wheel(
    project: Path,
    folder: Path,
    variant: Variant,
    environ: Mapping[str, str],
    report_dir: Path,
) -> Path:
    """Copy ``project`` under ``folder`` and build its wheel there as ``variant`` says."""
    # The two copies differ in every path component, down to the project folder's name.
    copy = folder / f"{variant.name}-copy" / f"{project.resolve().name}-{variant.name}"
    _copy_project(project, copy)
    wheel_dir = folder / "wheel"
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--verbose",
        "--wheel-dir",
        str(wheel_dir),
        str(copy),
    ]
    release = {
        "SOURCE_DATE_EPOCH": environ.get("SOURCE_DATE_EPOCH") or DEFAULT_SOURCE_DATE_EPOCH,
        "PIP_NO_INPUT": "1",
    }
    result = run_varied(command, variant, folder, environ, extra_environment=release)
    wheels = sorted(wheel_dir.glob("*.whl")) if wheel_dir.is_dir() else []
    if result.returncode == 0 and len(wheels) == 1:
        return wheels[0]
    log = _build_log(report_dir, variant)
    atomic_write_text(log, f"$ {' '.join(command)}\n{result.stdout}")
    tail = "\n".join(result.stdout.rstrip("\n").splitlines()[-30:])
    outcome = (
        f"exit status {result.returncode}"
        if result.returncode
        else f"{len(wheels)} wheels instead of one"
    )
    raise WheelBuildFailed(
        f"the {variant.name} wheel build failed ({outcome}); its output ends:\n{tail}\n"
        f"full output: {log}"
    )
