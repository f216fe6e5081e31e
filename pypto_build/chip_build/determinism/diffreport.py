"""Comparing two render trees, and reporting where they differ.

The comparison itself is ours (byte equality of every file, and of the set of paths), so a
verdict never depends on an optional tool. The report is diffoscope's when it is installed (the
``diff`` extra; it recurses into anything and is what reproducible-builds CI reads), run with
``--exclude-directory-metadata=yes`` because two renders necessarily differ in directory
timestamps. Without it, or when it fails or sees no difference, a built-in text report names
the differing files and shows a unified diff for text and the first differing byte for binary
files.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pypto_build.files import atomic_write_text, read_regular, walk_files

#: diffoscope's exit status for "the inputs differ" (0: identical, 2: trouble).
_DIFFOSCOPE_DIFFERENT = 1
#: How many differing files the built-in report shows in full.
MAX_SHOWN_FILES = 20
#: Lines of unified diff shown per file by the built-in report.
MAX_DIFF_LINES = 200


@dataclass(frozen=True)
class TreeDiff:
    """Paths (relative, sorted) present on one side only, and present on both but different."""

    only_left: tuple[str, ...] = ()
    only_right: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    @property
    def identical(self) -> bool:
        return not (self.only_left or self.only_right or self.changed)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every differing path, sorted."""
        return tuple(sorted({*self.only_left, *self.only_right, *self.changed}))


def compare_trees(left: Path, right: Path) -> TreeDiff:
    """Compare every file under ``left`` with the file at the same path under ``right``."""
    left_files = {path.as_posix() for path in walk_files(left)}
    right_files = {path.as_posix() for path in walk_files(right)}
    changed = [
        path
        for path in sorted(left_files & right_files)
        if read_regular(left / path) != read_regular(right / path)
    ]
    return TreeDiff(
        only_left=tuple(sorted(left_files - right_files)),
        only_right=tuple(sorted(right_files - left_files)),
        changed=tuple(changed),
    )


def find_diffoscope() -> str | None:
    """diffoscope beside this interpreter (an un-activated virtual environment), else on PATH."""
    beside = Path(sys.executable).parent / "diffoscope"
    if beside.is_file():
        return str(beside)
    return shutil.which("diffoscope")


@dataclass(frozen=True)
class Report:
    """A written report: its files, and which tool wrote them (with why, if not diffoscope)."""

    files: tuple[Path, ...]
    tool: str
    note: str = ""


def write_report(
    left: Path,
    right: Path,
    diff: TreeDiff,
    report_dir: Path,
    name: str,
    *,
    diffoscope: str | None,
) -> Report:
    """Write the report of ``diff`` between trees ``left`` and ``right`` into ``report_dir``
    as ``<name>.txt`` (and ``<name>.html`` from diffoscope)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    text_report = report_dir / f"{name}.txt"
    html_report = report_dir / f"{name}.html"
    for stale in (text_report, html_report):
        stale.unlink(missing_ok=True)
    outcome = diffoscope_report(
        diffoscope, left, right, text_report, html_report, ["--exclude-directory-metadata=yes"]
    )
    if isinstance(outcome, Report):
        return outcome
    atomic_write_text(text_report, builtin_report(left, right, diff, outcome))
    return Report((text_report,), "built-in", outcome)


def diffoscope_report(
    diffoscope: str | None,
    left: Path,
    right: Path,
    text_report: Path,
    html_report: Path,
    options: Sequence[str],
) -> Report | str:
    """diffoscope's report of ``left`` against ``right`` in ``text_report`` and
    ``html_report``, run with ``options``; or, when diffoscope is missing, fails or sees no
    difference, the note that heads the built-in report the caller writes instead.

    Every comparison (render trees, wheels) reports through here, so they all treat a missing
    or failing diffoscope alike.
    """
    if diffoscope is None:
        return (
            "diffoscope was not found (install pypto-build[diff] for its report); "
            "this is the built-in report"
        )
    command = [
        diffoscope,
        *options,
        "--text",
        str(text_report),
        "--html",
        str(html_report),
        str(left),
        str(right),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode == _DIFFOSCOPE_DIFFERENT and text_report.is_file():
        return Report((text_report, html_report), "diffoscope")
    text_report.unlink(missing_ok=True)
    html_report.unlink(missing_ok=True)
    if result.returncode == 0:
        return "diffoscope sees no difference in content; this is the built-in report"
    detail = result.stderr.strip().splitlines()[-1:] or [f"exit status {result.returncode}"]
    return f"diffoscope failed ({detail[0]}); this is the built-in report"


def builtin_report(left: Path, right: Path, diff: TreeDiff, note: str) -> str:
    """The built-in report: the differing files, a unified diff (text) or the first differing
    byte offset (binary) for each changed file."""
    lines = [note, f"--- {left}", f"+++ {right}", ""]
    lines += [f"Only in {left}: {path}" for path in diff.only_left]
    lines += [f"Only in {right}: {path}" for path in diff.only_right]
    lines += [f"Differs: {path}" for path in diff.changed]
    for path in diff.changed[:MAX_SHOWN_FILES]:
        lines.append("")
        lines += _file_diff(left / path, right / path, path)
    hidden = len(diff.changed) - MAX_SHOWN_FILES
    if hidden > 0:
        lines += ["", f"({hidden} more differing files not shown)"]
    return "\n".join(lines) + "\n"


def _file_diff(left: Path, right: Path, path: str) -> list[str]:
    old, new = read_regular(left), read_regular(right)
    old_text, new_text = _text(old), _text(new)
    if old_text is None or new_text is None:
        offset = next(
            (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
            min(len(old), len(new)),
        )
        return [
            f"Binary files differ: {path}: first difference at byte offset {offset} "
            f"(sizes {len(old)} and {len(new)})"
        ]
    diff = list(
        difflib.unified_diff(
            old_text.splitlines(),
            new_text.splitlines(),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
            lineterm="",
        )
    )
    if not diff:  # same lines, different line endings or final newline
        return [f"Files differ only in line endings or the final newline: {path}"]
    if len(diff) > MAX_DIFF_LINES:
        diff = [*diff[:MAX_DIFF_LINES], f"... ({len(diff) - MAX_DIFF_LINES} more lines)"]
    return diff


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
