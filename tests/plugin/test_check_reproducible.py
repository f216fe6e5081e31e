"""``check-reproducible``: two real builds of the sample package give one wheel; a build that
leaks its path, or a wheel changed after the fact, fails with a report naming the member."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from _support.console import run_cli
from _support.hatch_projects import build_wheel, copy_sample, edit, hook_environment

from pypto_build.chip_build.determinism.diffreport import find_diffoscope
from pypto_build.chip_build.determinism.wheel_diff import check_wheels
from pypto_build.chip_build.determinism.wheels import missing_build_requirements
from pypto_build.plugin.cli import ExitCode

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
MANIFEST = "moe_a2a/_kernels/a3/manifest.json"

#: A plain hatchling project whose custom build hook ships the folder it was built in: the
#: kind of leak check-reproducible exists to catch.
LEAKY_PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "leaky"
version = "1.0"

[tool.hatch.build.targets.wheel]
packages = ["leaky"]

[tool.hatch.build.targets.wheel.hooks.custom]
"""
LEAKY_HOOK = """\
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class WhereHook(BuildHookInterface):
    def initialize(self, version, build_data):
        where = Path(self.directory) / "where.txt"
        where.write_text(self.root, encoding="utf-8")
        build_data["force_include"][str(where)] = "leaky/where.txt"
"""


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hook_environment(monkeypatch, tmp_path / "cache", tmp_path / "tmp")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample package's wheel, for a3 only."""
    root = tmp_path_factory.mktemp("sample")
    with pytest.MonkeyPatch.context() as patch:
        hook_environment(patch, root / "cache", root / "tmp")
        return build_wheel(copy_sample(root / "moe_a2a", chips=("a3",)), root / "dist")


def rewrite(
    wheel: Path,
    out: Path,
    member: str,
    *,
    content: Callable[[bytes], bytes] = lambda data: data,
    date_time: tuple[int, int, int, int, int, int] | None = None,
) -> Path:
    """A copy of ``wheel`` in folder ``out`` with ``member``'s content or timestamp changed."""
    out.mkdir(parents=True)
    copy = out / wheel.name
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(copy, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == member:
                data = content(data)
                if date_time is not None:
                    info.date_time = date_time
            target.writestr(info, data, compress_type=info.compress_type)
    return copy


def to_a5(manifest: bytes) -> bytes:
    """The manifest of chip a3, claiming to be a5's."""
    return manifest.replace(b'"chip": "a3"', b'"chip": "a5"')


def test_an_identical_pair_passes_and_clears_an_old_report(wheel: Path, tmp_path: Path) -> None:
    report = tmp_path / "report"
    (report / "first").mkdir(parents=True)
    (report / "check-reproducible.txt").write_text("old", encoding="utf-8")
    (report / "other.txt").write_text("not ours", encoding="utf-8")
    copy = tmp_path / "copy" / wheel.name
    copy.parent.mkdir()
    shutil.copy(wheel, copy)
    check = check_wheels(wheel, copy, report, diffoscope=None)
    assert check.passed
    assert check.sha256[0] == check.sha256[1]
    assert (check.kept, check.report) == ((), None)
    assert sorted(path.name for path in report.iterdir()) == ["other.txt"]


def test_a_changed_member_fails_with_a_built_in_report_naming_it(
    wheel: Path, tmp_path: Path
) -> None:
    changed = rewrite(wheel, tmp_path / "changed", MANIFEST, content=to_a5)
    report = tmp_path / "report"
    check = check_wheels(wheel, changed, report, diffoscope=None)
    assert not check.passed
    assert check.diff.changed == (MANIFEST,)
    assert (check.diff.only_left, check.diff.only_right, check.diff.metadata) == ((), (), ())
    assert check.kept == (report / "first" / wheel.name, report / "second" / wheel.name)
    assert check.kept[1].read_bytes() == changed.read_bytes()
    assert check.report is not None
    assert check.report.tool == "built-in"
    text = (report / "check-reproducible.txt").read_text(encoding="utf-8")
    assert f"Differs: {MANIFEST}" in text
    assert f"--- a/{MANIFEST}\n+++ b/{MANIFEST}\n" in text
    assert '\n-  "chip": "a3",\n+  "chip": "a5",\n' in text


def test_a_changed_timestamp_is_named_as_an_archive_entry_difference(
    wheel: Path, tmp_path: Path
) -> None:
    member = "moe_a2a/_kernels/a3/next_levels/chip_pipeline/kernel_config.py"
    later = rewrite(wheel, tmp_path / "later", member, date_time=(2024, 1, 2, 3, 4, 6))
    check = check_wheels(wheel, later, tmp_path / "report", diffoscope=None)
    assert (check.passed, check.diff.changed, check.diff.metadata) == (False, (), (member,))
    text = (tmp_path / "report" / "check-reproducible.txt").read_text(encoding="utf-8")
    assert (
        f"Archive entry differs: {member}: timestamp (2020, 2, 2, 0, 0, 0) != (2024, 1, 2, 3, 4, 6)"
    ) in text


def test_diffoscope_reports_a_changed_member(wheel: Path, tmp_path: Path) -> None:
    diffoscope = find_diffoscope()
    if diffoscope is None:
        pytest.skip("diffoscope is not installed (the diff extra)")
    changed = rewrite(wheel, tmp_path / "changed", MANIFEST, content=to_a5)
    check = check_wheels(wheel, changed, tmp_path / "report", diffoscope=diffoscope)
    assert check.report is not None
    assert check.report.tool == "diffoscope", check.report.note
    text = (tmp_path / "report" / "check-reproducible.txt").read_text(encoding="utf-8")
    assert f"├── {MANIFEST}" in text
    assert (tmp_path / "report" / "check-reproducible.html").is_file()


@needs_gxx
@pytest.mark.slow
@pytest.mark.parametrize("sample", ["moe_a2a", "moe_mc2"])
def test_two_builds_of_a_sample_package_are_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sample: str
) -> None:
    project = copy_sample(tmp_path / sample, sample=sample)
    report = tmp_path / "report"
    code, out, err = run_cli(
        capsys, "check-reproducible", str(project), "--report", str(report), "--json"
    )
    assert (code, err) == (ExitCode.OK, ""), out
    document = json.loads(out)
    assert document["passed"] is True
    assert document["wheels"][0].startswith(f"{sample}-0.1.0-py3-none-")
    assert document["wheels"][0] == document["wheels"][1]
    assert document["sha256"][0] == document["sha256"][1]
    assert document["report"] == []
    assert not report.exists()


@pytest.mark.slow
def test_a_build_that_ships_its_path_fails_with_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "leaky"
    (project / "leaky").mkdir(parents=True)
    (project / "leaky" / "__init__.py").write_text("", encoding="utf-8")
    (project / "pyproject.toml").write_text(LEAKY_PYPROJECT, encoding="utf-8")
    (project / "hatch_build.py").write_text(LEAKY_HOOK, encoding="utf-8")
    report = tmp_path / "report"
    code, out, err = run_cli(capsys, "check-reproducible", str(project), "--report", str(report))
    assert (code, err) == (ExitCode.PROGRAM_ERROR, "")
    lines = out.splitlines()
    assert lines[0] == "FAILED: two builds of leaky-1.0-py2.py3-none-any.whl differ"
    assert "  content differs: leaky/where.txt" in lines
    assert "  content differs: leaky-1.0.dist-info/RECORD" in lines
    assert f"  wheel: {report / 'first' / 'leaky-1.0-py2.py3-none-any.whl'}" in lines
    assert f"  report: {report / 'check-reproducible.txt'}" in lines
    assert "leaky/where.txt" in (report / "check-reproducible.txt").read_text(encoding="utf-8")


def test_a_failed_build_is_an_error_with_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    edit(project / "pyproject.toml", 'chips = ["a3"]', 'chips = ["a7"]')
    report = tmp_path / "report"
    code, out, err = run_cli(capsys, "check-reproducible", str(project), "--report", str(report))
    assert (code, out) == (ExitCode.PROGRAM_ERROR, "")
    assert err.startswith("pypto-build: error: the first wheel build failed (exit status 1)")
    assert f"full output: {report / 'first-build.log'}" in err
    log = (report / "first-build.log").read_text(encoding="utf-8")
    assert "tool.pypto.chips[0]: unknown chip 'a7'" in log


def test_missing_build_tools_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = copy_sample(tmp_path / "moe_a2a")
    edit(
        project / "pyproject.toml",
        'requires = ["hatchling>=1.26", "pypto-build"]',
        'requires = ["hatchling>=1.26", "pypto-build", "no-such-tool>=1"]',
    )
    assert missing_build_requirements(project) == ["no-such-tool"]
    code, _, err = run_cli(capsys, "check-reproducible", str(project))
    assert code == ExitCode.USAGE_ERROR
    assert "build-system.requires names no-such-tool, which this environment lacks" in err
    code, _, err = run_cli(capsys, "check-reproducible", str(tmp_path))
    assert (code, err) == (
        ExitCode.USAGE_ERROR,
        f"pypto-build: error: {tmp_path}: no pyproject.toml; give a project folder\n",
    )
