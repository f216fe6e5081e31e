"""``lower --after all`` and ``render`` refuse exactly the same programs, with the same message.

Every diagnostic about what a build can generate belongs to the lowering (CheckLegality closes
the pipeline); the render only writes what the lowering accepted. Each rejected program of
``tests/legality_cases.py`` goes through both commands: both exit with a program error whose
diagnostic (file:line:col, message, phase) is the same, and the render writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.console import run_cli
from _support.legality_cases import CASES, Case

from pypto_build.errors import ExitCode


def _write(case: Case, folder: Path) -> Path:
    path = folder / "program.py"
    path.write_text(case.text)
    for name, text in case.files.items():
        (folder / name).write_text(text)
    return path


def _diagnostic(stderr: str) -> str:
    """The first line of a compiler-style diagnostic (the source line and caret follow)."""
    return stderr.splitlines()[0] if stderr else ""


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_lower_and_render_refuse_with_the_same_diagnostic(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(case, tmp_path)
    chips = [option for chip in case.chips for option in ("--chip", chip)]
    lowered = run_cli(capsys, "lower", str(path), "--after", "all", *chips)
    out = tmp_path / "out"
    rendered = run_cli(capsys, "render", str(path), "--out", str(out), *chips)
    assert (lowered[0], lowered[1]) == (ExitCode.PROGRAM_ERROR, "")
    assert (rendered[0], rendered[1]) == (ExitCode.PROGRAM_ERROR, "")
    diagnostic = _diagnostic(lowered[2])
    assert diagnostic == _diagnostic(rendered[2])
    assert diagnostic.startswith(f"{path}:")
    assert case.message in diagnostic
    assert diagnostic.endswith("[CheckLegality]")
    assert not out.exists()


def test_the_cases_are_distinct() -> None:
    assert len({case.id for case in CASES}) == len(CASES)
    assert len({case.message for case in CASES}) == len(CASES)
