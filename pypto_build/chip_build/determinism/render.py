"""``check-render``: prove that a render is a pure function of its inputs.

Three checks, each comparing two trees byte for byte and, on a difference, writing a report
(:mod:`.diffreport`):

``rail-identity``
    Every builtin kernel the program uses is rendered through the HOST rail (the variant
    sub-build's ``kernel.cpp.in`` output, variables from the package manifest) and through the
    CHIP rail (variables from the ``builtin_template_vars`` the lowering writes) for every chip;
    the two must be the same bytes, so a collective behaves alike on both rails.
``reproducible``
    The whole tree is rendered twice: once in this process, once by :mod:`.render_worker` in a
    subprocess whose environment differs from this process's in everything
    :mod:`.environment` varies (output path, working and temporary directories,
    ``PYTHONHASHSEED``, locale, time zone, umask, job count). Any difference is an input that
    leaked into the output.
``against``
    With a reference tree (one shipped in a wheel, say), a fresh render must equal it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto_build.chip_build.builtin_variants import rail_renders
from pypto_build.chip_build.chips import get_chip
from pypto_build.chip_build.determinism import render_worker
from pypto_build.chip_build.determinism.diffreport import (
    Report,
    TreeDiff,
    compare_trees,
    write_report,
)
from pypto_build.chip_build.determinism.environment import (
    current_umask,
    run_varied,
    unlike_this_process,
)
from pypto_build.chip_build.subbuild import RUNTIME, SourceProgram, render_subbuilds
from pypto_build.files import atomic_write_text

RAIL_IDENTITY = "rail-identity"
REPRODUCIBLE = "reproducible"
AGAINST = "against"
CHECKS = (RAIL_IDENTITY, REPRODUCIBLE, AGAINST)

_HOST_RAIL = "host-rail"
_CHIP_RAIL = "chip-rail"


@dataclass(frozen=True)
class Check:
    """The outcome of one check."""

    name: str
    description: str
    diff: TreeDiff
    report: Report | None = None
    #: Why the check could not compare (the second render failed), if it could not.
    error: str = ""

    @property
    def passed(self) -> bool:
        return self.diff.identical and not self.error

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "passed": self.passed,
            "differences": list(self.diff.paths),
            "error": self.error,
            "report": [str(path) for path in self.report.files] if self.report else [],
            "report_tool": self.report.tool if self.report else None,
            "report_note": self.report.note if self.report else "",
        }


@dataclass(frozen=True)
class CheckRenderResult:
    checks: tuple[Check, ...]
    report_dir: Path

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "report_dir": str(self.report_dir),
            "checks": [check.to_json() for check in self.checks],
        }


def check_render(
    path: Path,
    programs: Sequence[SourceProgram],
    chips: Sequence[str],
    *,
    source_root: Path,
    report_dir: Path,
    against: Path | None = None,
    diffoscope: str | None,
) -> CheckRenderResult:
    """Run the checks on ``programs`` (lowered from the file ``path`` for ``chips``)."""
    for name in CHECKS:
        for suffix in (".txt", ".html"):
            (report_dir / f"{name}{suffix}").unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="pypto-check-render-") as scratch:
        workspace = Path(scratch)
        checks = [_rail_identity(programs, chips, workspace, report_dir, diffoscope)]
        if not checks[0].passed:
            # Every render refuses rails that disagree, so the other checks cannot run.
            return CheckRenderResult(tuple(checks), report_dir)
        first = workspace / "first-render" / "tree"
        render_subbuilds(programs, chips, first, source_root=source_root)
        checks.append(
            _reproducible(path, chips, first, workspace, source_root, report_dir, diffoscope)
        )
        if against is not None:
            description = f"a fresh render equals {against}"
            checks.append(_compare(AGAINST, description, first, against, report_dir, diffoscope))
    return CheckRenderResult(tuple(checks), report_dir)


def _compare(
    name: str,
    description: str,
    left: Path,
    right: Path,
    report_dir: Path,
    diffoscope: str | None,
) -> Check:
    diff = compare_trees(left, right)
    if diff.identical:
        return Check(name, description, diff)
    report = write_report(left, right, diff, report_dir, name, diffoscope=diffoscope)
    return Check(name, description, diff, report)


# --- rail identity -----------------------------------------------------------------------------


def _rail_identity(
    programs: Sequence[SourceProgram],
    chips: Sequence[str],
    workspace: Path,
    report_dir: Path,
    diffoscope: str | None,
) -> Check:
    host_root = workspace / _HOST_RAIL
    chip_root = workspace / _CHIP_RAIL
    host_root.mkdir()
    chip_root.mkdir()
    variants: set[str] = set()
    for chip in chips:
        for source in programs:
            for variant, host_text, chip_text in rail_renders(
                source.program, get_chip(chip), RUNTIME
            ):
                variants.add(variant)
                atomic_write_text(host_root / chip / f"{variant}.cpp", host_text)
                atomic_write_text(chip_root / chip / f"{variant}.cpp", chip_text)
    description = "the HOST and CHIP rails render the same kernel for " + (
        ", ".join(sorted(variants))
        if variants
        # A CHIP-only package (the MC2 op's) renders on one rail: there is nothing to compare.
        else "(no builtin kernel of a package with both rails is used)"
    )
    return _compare(RAIL_IDENTITY, description, host_root, chip_root, report_dir, diffoscope)


# --- reproducibility ---------------------------------------------------------------------------


def _reproducible(
    path: Path,
    chips: Sequence[str],
    first: Path,
    workspace: Path,
    source_root: Path,
    report_dir: Path,
    diffoscope: str | None,
) -> Check:
    description = (
        "two renders (different output path, working and temporary directories, "
        "PYTHONHASHSEED, locale, time zone, umask and job count) are identical"
    )
    folder = workspace / "second-render-from-another-directory"
    second = folder / "nested" / "tree"
    command = [
        sys.executable,
        "-m",
        render_worker.__name__,
        str(path.resolve()),
        "--out",
        str(second),
        "--source-root",
        str(source_root.resolve()),
    ]
    for chip in chips:
        command += ["--chip", chip]
    variant = unlike_this_process(os.environ, current_umask())
    result = run_varied(command, variant, folder, os.environ)
    if result.returncode != 0:
        error = f"the second render failed (exit status {result.returncode}): "
        error += result.stdout.strip()
        return Check(REPRODUCIBLE, description, TreeDiff(), error=error)
    return _compare(REPRODUCIBLE, description, first, second, report_dir, diffoscope)
