"""check-render: the three checks, and the reports written for a difference (diffoscope's, or
the built-in one when diffoscope is missing or fails)."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest
from _support.rendered import ALL_CHIPS, PROGRAMS_DIR, render_program

from pypto_build.chip_build.determinism import render as check_render_module
from pypto_build.chip_build.determinism.diffreport import (
    TreeDiff,
    builtin_report,
    compare_trees,
    find_diffoscope,
    write_report,
)
from pypto_build.chip_build.determinism.render import (
    AGAINST,
    RAIL_IDENTITY,
    REPRODUCIBLE,
    CheckRenderResult,
    check_render,
)
from pypto_build.chip_build.subbuild import lower_file
from pypto_build.lowering.builtin_ops import BuiltinOp
from pypto_build.tree_layout import RELATIVE

PROGRAM = PROGRAMS_DIR / "host_rail_int8.py"
ORCHESTRATION = f"a3/{RELATIVE.sub_build('consume_orch').orchestration('consume_orch')}"


def _check(
    tmp_path: Path, *, against: Path | None = None, diffoscope: str | None = None
) -> CheckRenderResult:
    return check_render(
        PROGRAM,
        lower_file(PROGRAM, ALL_CHIPS),
        ALL_CHIPS,
        source_root=PROGRAMS_DIR,
        report_dir=tmp_path / "report",
        against=against,
        diffoscope=diffoscope,
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_program("host_rail_int8", tmp_path_factory.mktemp("reference") / "tree")


def _tampered(reference: Path, tmp_path: Path) -> Path:
    """A copy of ``reference`` with one character of one orchestration changed."""
    copy = tmp_path / "shipped"
    shutil.copytree(reference, copy)
    target = copy / ORCHESTRATION
    text = target.read_text()
    assert "add_output(*out);" in text
    target.write_text(text.replace("add_output(*out);", "add_output(*ou7);"))
    return copy


def test_all_checks_pass_for_a_deterministic_render(reference: Path, tmp_path: Path) -> None:
    result = _check(tmp_path, against=reference)
    assert [(check.name, check.passed) for check in result.checks] == [
        (RAIL_IDENTITY, True),
        (REPRODUCIBLE, True),
        (AGAINST, True),
    ]
    assert "builtin.tensor.all_to_all_v__int8" in result.checks[0].description
    assert result.passed
    assert not (tmp_path / "report").exists()


def test_a_changed_character_fails_against_with_the_builtin_report(
    reference: Path, tmp_path: Path
) -> None:
    result = _check(tmp_path, against=_tampered(reference, tmp_path), diffoscope=None)
    assert not result.passed
    against = result.checks[-1]
    assert (against.name, against.passed) == (AGAINST, False)
    assert against.diff == TreeDiff(changed=(ORCHESTRATION,))
    assert against.report is not None
    assert against.report.tool == "built-in"
    report = (tmp_path / "report" / "against.txt").read_text()
    assert report.startswith("diffoscope was not found")
    assert f"Differs: {ORCHESTRATION}" in report
    assert "-    task0_.add_output(*out);" in report
    assert "+    task0_.add_output(*ou7);" in report


@pytest.mark.skipif(find_diffoscope() is None, reason="diffoscope is not installed")
def test_a_changed_character_fails_against_with_a_diffoscope_report(
    reference: Path, tmp_path: Path
) -> None:
    shipped = _tampered(reference, tmp_path)
    result = _check(tmp_path, against=shipped, diffoscope=find_diffoscope())
    against = result.checks[-1]
    assert not against.passed
    assert against.report is not None and against.report.tool == "diffoscope"
    assert [path.name for path in against.report.files] == ["against.txt", "against.html"]
    report = (tmp_path / "report" / "against.txt").read_text()
    assert f"{shipped}/{ORCHESTRATION}" in report
    assert "+    task0_.add_output(*ou7);" in report
    assert "-    task0_.add_output(*out);" in report
    assert (tmp_path / "report" / "against.html").stat().st_size > 0


def test_rail_identity_catches_variables_that_disagree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CHIP rail's variables come from the lowering; make them disagree with the manifest.
    monkeypatch.setattr(
        BuiltinOp, "template_vars", lambda self, dtype, config=(): "dtype_cpp=double"
    )
    result = _check(tmp_path)
    # A render refuses rails that disagree, so the render-based checks do not run.
    assert len(result.checks) == 1
    rail = result.checks[0]
    assert (rail.name, rail.passed) == (RAIL_IDENTITY, False)
    assert rail.diff.changed == tuple(
        f"{chip}/builtin.tensor.all_to_all_v__int8.cpp" for chip in ALL_CHIPS
    )
    report = (tmp_path / "report" / "rail-identity.txt").read_text()
    assert "-using Elem = int8_t;\n+using Elem = double;" in report


def test_stale_reports_are_removed(reference: Path, tmp_path: Path) -> None:
    stale = tmp_path / "report" / "against.txt"
    stale.parent.mkdir()
    stale.write_text("old\n")
    assert _check(tmp_path, against=reference).passed
    assert not stale.exists()


def test_diffoscope_trouble_falls_back_to_the_builtin_report(tmp_path: Path) -> None:
    left, right = tmp_path / "left", tmp_path / "right"
    for root, text in ((left, "a\n"), (right, "b\n")):
        root.mkdir()
        (root / "f.txt").write_text(text)
    broken = tmp_path / "diffoscope"
    broken.write_text("#!/bin/sh\necho 'Missing or incomplete libarchive module' >&2\nexit 2\n")
    broken.chmod(0o755)
    diff = compare_trees(left, right)
    report = write_report(left, right, diff, tmp_path / "report", "x", diffoscope=str(broken))
    assert report.tool == "built-in"
    assert report.note.startswith("diffoscope failed (Missing or incomplete libarchive module)")
    assert [path.name for path in report.files] == ["x.txt"]
    assert "-a\n+b\n" in (tmp_path / "report" / "x.txt").read_text()


def test_diffoscope_seeing_no_difference_falls_back_to_the_builtin_report(
    tmp_path: Path,
) -> None:
    left, right = tmp_path / "left", tmp_path / "right"
    for root, text in ((left, "a\n"), (right, "b\n")):
        root.mkdir()
        (root / "f.txt").write_text(text)
    blind = tmp_path / "diffoscope"
    blind.write_text('#!/bin/sh\nfor a; do [ "$p" = --html ] && echo x > "$a"; p=$a; done\n')
    blind.chmod(0o755)
    diff = compare_trees(left, right)
    report = write_report(left, right, diff, tmp_path / "report", "x", diffoscope=str(blind))
    assert report.tool == "built-in"
    assert report.note.startswith("diffoscope sees no difference in content")
    assert sorted(path.name for path in (tmp_path / "report").iterdir()) == ["x.txt"]
    assert "-a\n+b\n" in (tmp_path / "report" / "x.txt").read_text()


def test_builtin_report_lists_missing_files_and_binary_offsets(tmp_path: Path) -> None:
    left, right = tmp_path / "left", tmp_path / "right"
    (left / "sub").mkdir(parents=True)
    (right / "sub").mkdir(parents=True)
    (left / "only_left.txt").write_text("x\n")
    (right / "sub" / "only_right.txt").write_text("y\n")
    (left / "blob.bin").write_bytes(bytes([0, 1, 2, 3]))
    (right / "blob.bin").write_bytes(bytes([0, 1, 9, 3, 4]))
    (left / "crlf.txt").write_bytes(b"a\r\n")
    (right / "crlf.txt").write_bytes(b"a\n")
    diff = compare_trees(left, right)
    assert diff == TreeDiff(
        only_left=("only_left.txt",),
        only_right=("sub/only_right.txt",),
        changed=("blob.bin", "crlf.txt"),
    )
    text = builtin_report(left, right, diff, "note")
    assert f"Only in {left}: only_left.txt" in text
    assert f"Only in {right}: sub/only_right.txt" in text
    assert (
        "Binary files differ: blob.bin: first difference at byte offset 2 (sizes 4 and 5)" in text
    )
    assert "Files differ only in line endings or the final newline: crlf.txt" in text


#: A render that also writes what its process sees into the tree: installed in this process by
#: monkeypatching, and in the second render's process by a ``sitecustomize`` module.
LEAK = """\
import os
import tempfile
from pathlib import Path

import pypto_build.chip_build.subbuild as subbuild


def leaky(render):
    def render_subbuilds(programs, chips, out_dir, *, source_root):
        result = render(programs, chips, out_dir, source_root=source_root)
        umask = os.umask(0)
        os.umask(umask)
        seen = {
            "cwd": os.getcwd(),
            "out": str(out_dir),
            "temp": tempfile.gettempdir(),
            "umask": oct(umask),
            **{name: os.environ.get(name) for name in
               ("PYTHONHASHSEED", "LC_ALL", "LANG", "TZ", "PYPTO_JOBS")},
        }
        lines = "".join(f"{key} {value}\\n" for key, value in seen.items())
        (Path(out_dir) / "leak.txt").write_text(lines)
        return result

    return render_subbuilds


def install():
    subbuild.render_subbuilds = leaky(subbuild.render_subbuilds)
"""


def test_reproducible_catches_anything_the_second_render_s_process_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "pypto_check_render_leak.py").write_text(LEAK)
    (probe / "sitecustomize.py").write_text(
        "import pypto_check_render_leak as leak\n\nleak.install()\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(probe))
    monkeypatch.syspath_prepend(str(probe))
    leak = importlib.import_module("pypto_check_render_leak")
    monkeypatch.setattr(
        check_render_module, "render_subbuilds", leak.leaky(check_render_module.render_subbuilds)
    )
    result = _check(tmp_path, diffoscope=None)
    reproducible = result.checks[1]
    assert (reproducible.name, reproducible.passed, reproducible.error) == (REPRODUCIBLE, False, "")
    assert reproducible.diff == TreeDiff(changed=("leak.txt",))
    report = (tmp_path / "report" / "reproducible.txt").read_text()
    # The two renders saw another value of everything, this process's first render and the
    # worker's second: no line of the leak is common to both.
    for key in ("cwd", "out", "temp", "umask", "PYTHONHASHSEED", "LC_ALL", "TZ", "PYPTO_JOBS"):
        assert f"\n-{key} " in report
        assert f"\n+{key} " in report
        assert f"\n {key} " not in report
