"""``pypto-build render`` and ``pypto-build check-render``, run in-process through ``main``."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from _support.console import run_cli

import pypto_build.chip_build.determinism.diffreport as diffreport
from pypto_build.plugin.cli import ExitCode
from pypto_build.tree_layout import TreeLayout

PROGRAMS = Path(__file__).resolve().parent / "programs"
CHIP_PIPELINE = PROGRAMS / "chip_pipeline.py"


def test_render_writes_a_tree_per_chip(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        capsys, "render", str(CHIP_PIPELINE), "--out", str(out), "--chip", "a5"
    )
    assert (code, stderr) == (ExitCode.OK, "")
    assert stdout == f"a5: 12 files in {out / 'a5'}\n"
    assert TreeLayout(out / "a5").sub_build("chip_pipeline").kernel_config.is_file()
    assert sorted(p.name for p in out.iterdir()) == ["a5"]


def test_verbose_render_and_lower_tell_each_step_and_its_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    argv = ("render", str(CHIP_PIPELINE), "--out", str(out), "--chip", "a5")
    code, stdout, stderr = run_cli(capsys, *argv, "-v")
    assert (code, stdout) == (ExitCode.OK, f"a5: 12 files in {out / 'a5'}\n")
    assert re.fullmatch(
        rf"pypto-build: lowered {re.escape(str(CHIP_PIPELINE))} for a5 \(\d+\.\d\d s\)\n"
        rf"pypto-build: rendered 1 program\(s\) into {re.escape(str(out))} \(\d+\.\d\d s\)\n",
        stderr,
    )
    code, _, stderr = run_cli(capsys, "lower", str(CHIP_PIPELINE), "--after", "all", "--verbose")
    assert code == ExitCode.OK
    assert stderr.startswith(f"pypto-build: parsed {CHIP_PIPELINE} (")
    assert "pypto-build: ran the passes up to all on 1 program(s) (" in stderr
    assert run_cli(capsys, "lower", str(CHIP_PIPELINE))[2] == ""


def test_render_defaults_to_every_supporting_chip_and_prints_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run_cli(capsys, "render", str(CHIP_PIPELINE), "--out", str(out), "--json")
    assert code == ExitCode.OK
    summary = json.loads(stdout)
    assert summary["out"] == str(out)
    assert sorted(summary["chips"]) == ["a2", "a3", "a5"]
    assert "next_levels/chip_pipeline/orchestration/chip_pipeline.cpp" in summary["chips"]["a2"]
    assert "manifest.json" in summary["chips"]["a2"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["render", "missing.py", "--out", "x"], "missing.py: no such file"),
        (["render", str(CHIP_PIPELINE), "--out", "x", "--chip", "b9"], "invalid choice: 'b9'"),
        (["render", str(CHIP_PIPELINE)], "the following arguments are required: --out"),
        (
            ["render", str(CHIP_PIPELINE), "--out", "x", "--source-root", "nowhere"],
            "--source-root: nowhere: no such directory",
        ),
    ],
)
def test_render_usage_errors(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, stderr = run_cli(capsys, *argv)
    assert code == ExitCode.USAGE_ERROR
    assert message in stderr
    assert not (tmp_path / "x").exists()


def test_render_refuses_an_output_directory_that_is_not_a_render(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("keep me\n")
    code, _, stderr = run_cli(capsys, "render", str(CHIP_PIPELINE), "--out", str(tmp_path))
    assert code == ExitCode.USAGE_ERROR
    assert "exists and is not a render tree" in stderr
    assert (tmp_path / "notes.txt").read_text() == "keep me\n"


def test_render_reports_program_errors_like_a_compiler(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    program = tmp_path / "prog.py"
    program.write_text(
        textwrap.dedent(
            """\
            import pypto.language as pl

            @pl.program
            class P:
                @pl.function(type=pl.FunctionType.AIV, external_source="kernels/k.cpp")
                def k(self, x: pl.Tensor[[4], pl.FP32], y: pl.Out[pl.Tensor[[4], pl.FP32]]
                      ) -> pl.Tensor[[4], pl.FP32]: ...

                @pl.function(type=pl.FunctionType.Orchestration)
                def orch(self, x: pl.Tensor[[4], pl.FP32], y: pl.Out[pl.Tensor[[4], pl.FP32]]):
                    self.k(x, y)
            """
        )
    )
    code, stdout, stderr = run_cli(capsys, "render", str(program), "--out", str(tmp_path / "out"))
    assert (code, stdout) == (ExitCode.PROGRAM_ERROR, "")
    assert stderr.startswith(f"{program}:6:5: error: external_source 'kernels/k.cpp' of kernel 'k'")
    assert "[CheckLegality]" in stderr
    assert not (tmp_path / "out").exists()


def test_render_of_a_file_without_programs_is_a_program_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    code, _, stderr = run_cli(
        capsys, "render", str(empty), "--out", str(tmp_path / "out"), "--chip", "a3"
    )
    assert code == ExitCode.PROGRAM_ERROR
    assert "defines no @pl.program class" in stderr


def test_check_render_passes_and_prints_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["check-render", str(CHIP_PIPELINE), "--chip", "a3", "--report", str(tmp_path / "r")]
    code, stdout, stderr = run_cli(capsys, *argv, "--json")
    assert (code, stderr) == (ExitCode.OK, "")
    summary = json.loads(stdout)
    assert summary["passed"] is True
    assert [(c["name"], c["passed"]) for c in summary["checks"]] == [
        ("rail-identity", True),
        ("reproducible", True),
    ]


def test_check_render_covers_the_mc2_sample(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, repo_root: Path
) -> None:
    """As the sample's README runs it: the fused operator's MIX kernel, rendered with its
    tiling on the CHIP rail only, renders the same in another process and environment."""
    project = repo_root / "samples" / "moe_mc2"
    program = project / "src" / "moe_mc2" / "pipelines.py"
    argv = ["check-render", str(program), "--source-root", str(project)]
    code, stdout, stderr = run_cli(capsys, *argv, "--report", str(tmp_path / "r"), "--json")
    assert (code, stderr) == (ExitCode.OK, "")
    summary = json.loads(stdout)
    assert [(c["name"], c["passed"]) for c in summary["checks"]] == [
        ("rail-identity", True),
        ("reproducible", True),
    ]


def test_check_render_against_a_changed_tree_fails_with_the_builtin_report(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shipped = tmp_path / "shipped"
    assert (
        run_cli(capsys, "render", str(CHIP_PIPELINE), "--out", str(shipped), "--chip", "a3")[0] == 0
    )
    kernel_config = TreeLayout(shipped / "a3").sub_build("chip_pipeline").kernel_config
    kernel_config.write_text(
        kernel_config.read_text().replace('"aicpu_thread_num": 0', '"aicpu_thread_num": 1')
    )
    # Force the built-in report, as on a machine without diffoscope.
    monkeypatch.setattr(diffreport, "find_diffoscope", lambda: None)
    report_dir = tmp_path / "report"
    code, stdout, _ = run_cli(
        capsys,
        "check-render",
        str(CHIP_PIPELINE),
        "--chip",
        "a3",
        "--against",
        str(shipped),
        "--report",
        str(report_dir),
    )
    assert code == 1
    assert "FAILED: against: a fresh render equals" in stdout
    assert "  differs: a3/next_levels/chip_pipeline/kernel_config.py\n" in stdout
    assert "diffoscope was not found" in stdout
    assert f"  report: {report_dir / 'against.txt'}\n" in stdout
    report = (report_dir / "against.txt").read_text()
    assert '-\t"aicpu_thread_num": 0,\n+\t"aicpu_thread_num": 1,' in report


def test_check_render_against_a_tree_holding_a_link_is_one_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shipped = tmp_path / "shipped"
    assert (
        run_cli(capsys, "render", str(CHIP_PIPELINE), "--out", str(shipped), "--chip", "a3")[0] == 0
    )
    (shipped / "a3" / "passwd").symlink_to("/etc/passwd")
    argv = ["check-render", str(CHIP_PIPELINE), "--chip", "a3", "--against", str(shipped)]
    code, stdout, stderr = run_cli(capsys, *argv, "--report", str(tmp_path / "report"))
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"pypto-build: error: --against: {shipped} holds a symbolic link (a3/passwd), which no "
        "render writes; it is not followed\n"
    )
