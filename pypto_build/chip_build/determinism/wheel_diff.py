"""Comparing two wheels of one project, and reporting where they differ.

The verdict is byte equality of the two wheel files: that is what a user who rebuilds a release
checks. When they differ, both are kept in the report folder and a report says why:
diffoscope's when it is installed and finds the difference (``--exclude-directory-metadata=
recursive`` and without ``zipdetails``: the member contents, which is where a build leaks), else
the built-in one, which names every member that is only in one wheel, differs in content (with a
unified diff or the first differing byte, as :mod:`.diffreport` shows files) or differs in its
archive metadata (timestamp, mode, compression), and a different member order.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto_build.chip_build.determinism.diffreport import (
    Report,
    TreeDiff,
    builtin_report,
    diffoscope_report,
)
from pypto_build.chip_build.determinism.environment import VARIANTS
from pypto_build.files import atomic_write_text, read_regular, sha256_regular

REPORT_NAME = "check-reproducible"


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
    if read_regular(left) == read_regular(right):
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
    """Remove the report and the kept wheels an earlier comparison wrote into ``report_dir``
    (and nothing else)."""
    for suffix in (".txt", ".html"):
        (report_dir / f"{REPORT_NAME}{suffix}").unlink(missing_ok=True)
    for variant in VARIANTS:
        shutil.rmtree(report_dir / variant.name, ignore_errors=True)


def check_wheels(
    left: Path, right: Path, report_dir: Path, *, diffoscope: str | None
) -> WheelCheck:
    """Compare two wheels; when they differ, copy both into ``report_dir/first`` and
    ``report_dir/second`` and write the report there."""
    clear_report(report_dir)
    names = (left.name, right.name)
    sha256 = (sha256_regular(left), sha256_regular(right))
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
