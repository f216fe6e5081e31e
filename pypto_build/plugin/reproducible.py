"""``check-reproducible``: two wheel builds of a project must be byte-identical (DESIGN §1, §11).

The project is copied to two different folders and each copy is built by
``python -m pip wheel --no-deps --no-build-isolation`` in a subprocess whose environment varies
everything a build must not depend on: the project's path, the working directory, the
temporary directory, ``PYTHONHASHSEED``, the locale, the time zone, the umask and the job count.
Each build gets its own empty compile cache, so both compile from scratch (a shared cache would
hand the second build the first build's binaries and hide a compiler that is not deterministic).
``SOURCE_DATE_EPOCH`` is the same for both (the caller's, else hatchling's own default), as a
release would set it.

The builds run without isolation so that both use the build tools of this environment (the same
hatchling, the same pypto-build, the one that runs this check); the project's
``build-system.requires`` must therefore be installed here, which is checked first.

The verdict is byte equality of the two wheel files. When they differ, both are kept in the
report folder and a report says why: diffoscope's when it is installed and finds the difference
(``--exclude-directory-metadata=recursive`` and without ``zipdetails``: the member contents,
which is where a build leaks), else the built-in one, which names every member that is only
in one wheel, differs in content (with a unified diff or the first differing byte) or differs in
its archive metadata (timestamp, mode, compression), and a different member order.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypto_build
from pypto_build.chip_build.diffreport import (
    Report,
    TreeDiff,
    builtin_report,
    diffoscope_report,
)
from pypto_build.chip_build.fs import atomic_write_text, sha256_file

#: The archive timestamp both builds use when the caller sets none: hatchling's own default
#: (2020-02-02), so the wheels equal those a plain ``pip wheel`` makes.
DEFAULT_SOURCE_DATE_EPOCH = "1580601600"
REPORT_NAME = "check-reproducible"
#: Folders never copied with the project: version-control metadata stays (a version may come
#: from it); caches anywhere, and build output and environments at the top, go.
_SKIPPED_ANYWHERE = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
_SKIPPED_AT_TOP = frozenset({"build", "dist", ".venv", "venv", ".tox", ".nox"})
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class ReproducibleError(Exception):
    """The check cannot run: no project there, or build tools missing from the environment."""


class WheelBuildFailed(Exception):
    """One of the two builds failed; the message holds the end of its output and the log."""


@dataclass(frozen=True)
class BuildVariant:
    """What one of the two builds varies (see the module)."""

    name: str
    hash_seed: str
    locale: str
    time_zone: str
    umask: int
    jobs: str


VARIANTS = (
    BuildVariant("first", "1", "C.UTF-8", "UTC", 0o022, "1"),
    BuildVariant("second", "2", "C", "Pacific/Kiritimati", 0o077, "2"),
)


@dataclass(frozen=True)
class WheelDiff:
    """How two wheels differ: ``identical`` is byte equality of the files; the member lists
    (sorted) explain a difference."""

    identical: bool
    only_left: tuple[str, ...] = ()
    only_right: tuple[str, ...] = ()
    #: Members whose content differs.
    changed: tuple[str, ...] = ()
    #: Members whose archive entry differs (timestamp, mode, compression, extra field).
    metadata: tuple[str, ...] = ()
    #: Same members, written in another order.
    reordered: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "only_in_first": list(self.only_left),
            "only_in_second": list(self.only_right),
            "content": list(self.changed),
            "metadata": list(self.metadata),
            "reordered": self.reordered,
        }


def _entry_metadata(info: zipfile.ZipInfo) -> dict[str, object]:
    return {
        "timestamp": info.date_time,
        "mode": oct(info.external_attr >> 16),
        "compression": info.compress_type,
        "extra": info.extra.hex(),
    }


def compare_wheels(left: Path, right: Path) -> WheelDiff:
    """Compare the wheel files ``left`` and ``right``, member by member when they differ."""
    if left.read_bytes() == right.read_bytes():
        return WheelDiff(identical=True)
    with zipfile.ZipFile(left) as old, zipfile.ZipFile(right) as new:
        old_names, new_names = old.namelist(), new.namelist()
        common = sorted(set(old_names) & set(new_names))
        return WheelDiff(
            identical=False,
            only_left=tuple(sorted(set(old_names) - set(new_names))),
            only_right=tuple(sorted(set(new_names) - set(old_names))),
            changed=tuple(name for name in common if old.read(name) != new.read(name)),
            metadata=tuple(
                name
                for name in common
                if _entry_metadata(old.getinfo(name)) != _entry_metadata(new.getinfo(name))
            ),
            reordered=[n for n in old_names if n in common]
            != [n for n in new_names if n in common],
        )


@dataclass(frozen=True)
class WheelCheck:
    """The comparison of the two wheels and, when they differ, the report."""

    #: The two wheels' file names and SHA-256 digests.
    names: tuple[str, str]
    sha256: tuple[str, str]
    diff: WheelDiff
    #: Copies of the two wheels in the report folder, when they differ.
    kept: tuple[Path, ...] = ()
    report: Report | None = None

    @property
    def passed(self) -> bool:
        return self.diff.identical

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "wheels": list(self.names),
            "sha256": list(self.sha256),
            "differences": self.diff.to_json(),
            "kept": [str(path) for path in self.kept],
            "report": [str(path) for path in self.report.files] if self.report else [],
            "report_tool": self.report.tool if self.report else None,
            "report_note": self.report.note if self.report else "",
        }


def clear_report(report_dir: Path) -> None:
    """Remove what an earlier check wrote into ``report_dir`` (and nothing else)."""
    for suffix in (".txt", ".html"):
        (report_dir / f"{REPORT_NAME}{suffix}").unlink(missing_ok=True)
    for variant in VARIANTS:
        shutil.rmtree(report_dir / variant.name, ignore_errors=True)
        _build_log(report_dir, variant).unlink(missing_ok=True)


def _build_log(report_dir: Path, variant: BuildVariant) -> Path:
    return report_dir / f"{variant.name}-build.log"


def check_wheels(
    left: Path, right: Path, report_dir: Path, *, diffoscope: str | None
) -> WheelCheck:
    """Compare two wheels; when they differ, copy both into ``report_dir/first`` and
    ``report_dir/second`` and write the report there."""
    clear_report(report_dir)
    names = (left.name, right.name)
    sha256 = (sha256_file(left), sha256_file(right))
    diff = compare_wheels(left, right)
    if diff.identical:
        return WheelCheck(names, sha256, diff)
    kept = []
    for variant, wheel in zip(VARIANTS, (left, right), strict=True):
        folder = report_dir / variant.name
        folder.mkdir(parents=True)
        kept.append(Path(shutil.copy2(wheel, folder / wheel.name)))
    first, second = kept
    report = write_wheel_report(first, second, diff, report_dir, diffoscope=diffoscope)
    return WheelCheck(names, sha256, diff, (first, second), report)


def write_wheel_report(
    left: Path, right: Path, diff: WheelDiff, report_dir: Path, *, diffoscope: str | None
) -> Report:
    """Write ``check-reproducible.txt`` (and ``.html`` from diffoscope) into ``report_dir``."""
    text_report = report_dir / f"{REPORT_NAME}.txt"
    html_report = report_dir / f"{REPORT_NAME}.html"
    options = [
        "--exclude-directory-metadata=recursive",
        # zipdetails lists every header's offset: one changed member shifts them all.
        "--exclude-command=^zipdetails",
    ]
    outcome = diffoscope_report(diffoscope, left, right, text_report, html_report, options)
    if isinstance(outcome, Report):
        return outcome
    atomic_write_text(text_report, builtin_wheel_report(left, right, diff, outcome))
    return Report((text_report,), "built-in", outcome)


def builtin_wheel_report(left: Path, right: Path, diff: WheelDiff, note: str) -> str:
    """The built-in report: differing members' contents (as the tree report shows files), then
    their differing archive metadata and the member order."""
    with tempfile.TemporaryDirectory(prefix="pypto-check-reproducible-") as scratch:
        trees = []
        for variant, wheel in zip(VARIANTS, (left, right), strict=True):
            tree = Path(scratch) / variant.name / wheel.name
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(tree)
            trees.append(tree)
        members = TreeDiff(diff.only_left, diff.only_right, diff.changed)
        text = builtin_report(trees[0], trees[1], members, note)
    lines = [text.rstrip("\n")]
    if diff.metadata:
        lines.append("")
        with zipfile.ZipFile(left) as old, zipfile.ZipFile(right) as new:
            for name in diff.metadata:
                before = _entry_metadata(old.getinfo(name))
                after = _entry_metadata(new.getinfo(name))
                fields = ", ".join(
                    f"{key} {before[key]} != {after[key]}"
                    for key in before
                    if before[key] != after[key]
                )
                lines.append(f"Archive entry differs: {name}: {fields}")
    if diff.reordered:
        lines += ["", "The wheels hold their common members in a different order."]
    if not (diff.only_left or diff.only_right or diff.changed or diff.metadata or diff.reordered):
        lines += ["", "Every member is the same; the archives differ outside them."]
    return "\n".join(lines) + "\n"


# --- building twice ----------------------------------------------------------------------------


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
    try:
        with (project / "pyproject.toml").open("rb") as stream:
            document = tomllib.load(stream)
    except FileNotFoundError:
        raise ReproducibleError(f"{project}: no pyproject.toml") from None
    except tomllib.TOMLDecodeError as exc:
        raise ReproducibleError(f"{project / 'pyproject.toml'}: {exc}") from None
    requires = document.get("build-system", {}).get("requires", [])
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


def _build_wheel(
    project: Path,
    folder: Path,
    variant: BuildVariant,
    environ: Mapping[str, str],
    report_dir: Path,
) -> Path:
    """Copy ``project`` under ``folder`` and build its wheel there as ``variant`` says."""
    # The two copies differ in every path component, down to the project folder's name.
    copy = folder / f"{variant.name}-copy" / f"{project.resolve().name}-{variant.name}"
    _copy_project(project, copy)
    wheel_dir = folder / "wheel"
    temp = folder / "tmp"
    temp.mkdir(parents=True)
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
    result = subprocess.run(
        command,
        cwd=folder,
        env=_environment(variant, folder, environ),
        umask=variant.umask,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
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


def _environment(variant: BuildVariant, folder: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with what ``variant`` varies set, a private cache and temporary directory,
    and this pypto-build first on the import path (the builds must run the code that checks)."""
    env = dict(environ)
    env.update(
        PYTHONHASHSEED=variant.hash_seed,
        LC_ALL=variant.locale,
        LANG=variant.locale,
        TZ=variant.time_zone,
        PYPTO_JOBS=variant.jobs,
        PYPTO_CACHE_DIR=str(folder / "cache"),
        TMPDIR=str(folder / "tmp"),
        SOURCE_DATE_EPOCH=environ.get("SOURCE_DATE_EPOCH") or DEFAULT_SOURCE_DATE_EPOCH,
        PIP_NO_INPUT="1",
    )
    package_parent = str(Path(pypto_build.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, environ.get("PYTHONPATH")]))
    return env
