"""The ``pypto-build`` command line, run in-process through ``main`` (plus one real process)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from _support.console import run_cli

import pypto_build.lowering.frontend as frontend
import pypto_build.lowering.lower as lower
import pypto_build.lowering.passes as passes
from pypto_build import __version__
from pypto_build.builtins import BuiltinRegistryError, ManifestError
from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import Program
from pypto_build.lowering.passes.base import Pass, PassManager
from pypto_build.plugin.cli import ExitCode

PROGRAMS = Path(__file__).parent / "programs"

SAMPLE = "samples/moe_a2a/src/moe_a2a/pipelines.py"


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "--version") == (0, f"pypto-build {__version__}\n", "")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys)
    assert code == ExitCode.USAGE_ERROR
    assert out == ""
    assert "a command is required" in err


def test_bad_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "lower")
    assert code == ExitCode.USAGE_ERROR
    assert "the following arguments are required: PATH" in err


def test_lower_prints_the_readme_sample(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, repo_root: Path
) -> None:
    monkeypatch.chdir(repo_root)
    code, out, err = run_cli(capsys, "lower", SAMPLE)
    assert (code, err) == (0, "")
    assert out.startswith("import pypto.language as pl\n")
    assert "class MoeDispatch:" in out
    assert (
        "data = pld.tensor.all_to_all_v(stage, data, signal, send_counts, recv_counts, "
        "core_num=4)" in out
    )
    assert "device=r)" in out


def test_lower_prints_the_chip_rail_test_program(
    capsys: pytest.CaptureFixture[str], repo_root: Path
) -> None:
    code, out, _ = run_cli(
        capsys, "lower", str(repo_root / "tests" / "programs" / "chip_pipeline.py")
    )
    assert code == 0
    assert "data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=1)" in out


def test_lower_output_parses_back_to_the_same_programs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, sample_program: Path
) -> None:
    code, out, _ = run_cli(capsys, "lower", str(sample_program))
    assert code == 0
    printed = _write(tmp_path / "printed.py", out)
    assert frontend.parse_file(printed) == frontend.parse_file(sample_program)


def test_lower_class_selects_one_program(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    two = _write(
        tmp_path / "two.py",
        """\
        import pypto_build.lang as pl


        @pl.program
        class First:
            @pl.function(type=pl.FunctionType.Orchestration)
            def orch(self, x: pl.Tensor[[8], pl.FP32]) -> pl.Tensor[[8], pl.FP32]:
                return x


        @pl.program
        class Second:
            @pl.function(type=pl.FunctionType.Orchestration)
            def orch(self, x: pl.Tensor[[4], pl.FP32]) -> pl.Tensor[[4], pl.FP32]:
                return x
        """,
    )
    code, both, _ = run_cli(capsys, "lower", str(two))
    assert code == 0
    assert both.index("class First:") < both.index("class Second:")
    code, second, _ = run_cli(capsys, "lower", str(two), "--class", "Second")
    assert code == 0
    assert "class Second:" in second
    assert "class First:" not in second


def test_lower_unknown_class_lists_the_classes(
    capsys: pytest.CaptureFixture[str], sample_program: Path
) -> None:
    code, out, err = run_cli(capsys, "lower", str(sample_program), "--class", "Nope")
    assert (code, out) == (ExitCode.USAGE_ERROR, "")
    assert "no @pl.program class 'Nope'; classes: MoeDispatch" in err


def test_lower_program_error_is_rendered_like_a_compiler(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = _write(
        tmp_path / "broken.py",
        """\
        import pypto_build.lang as pl


        @pl.program
        class Broken:
            @pl.function(type=pl.FunctionType.Orchestration)
            def orch(self, x: pl.Tensor[[8, 4], pl.FP32]) -> pl.Tensor[[8, 4], pl.FP32]:
                y = pl.reshape(x, [3, 4])
                return y
        """,
    )
    code, out, err = run_cli(capsys, "lower", str(broken))
    assert (code, out) == (ExitCode.PROGRAM_ERROR, "")
    header, source_line, caret = err.splitlines()
    assert header.startswith(f"{broken}:8:27: error: ")
    assert source_line == "        y = pl.reshape(x, [3, 4])"
    assert caret == " " * 26 + "^"
    assert "Traceback" not in err


def test_lower_file_without_programs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = _write(tmp_path / "empty.py", "import pypto_build.lang as pl\n")
    code, out, err = run_cli(capsys, "lower", str(empty))
    assert (code, out) == (ExitCode.PROGRAM_ERROR, "")
    assert "defines no @pl.program class" in err


def test_lower_missing_file_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run_cli(capsys, "lower", str(tmp_path / "absent.py"))
    assert (code, out) == (ExitCode.USAGE_ERROR, "")
    assert err == f"pypto-build: error: {tmp_path / 'absent.py'}: no such file\n"


def test_internal_error_exits_3(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, sample_program: Path
) -> None:
    def broken_front_end(path: str) -> tuple[Program, ...]:
        raise InternalError("front end lost its way")

    monkeypatch.setattr(frontend, "parse_file", broken_front_end)
    code, out, err = run_cli(capsys, "lower", str(sample_program))
    assert (code, out) == (ExitCode.INTERNAL_ERROR, "")
    assert "internal error (a bug in pypto-build, please report it): front end lost its way" in err


@pytest.mark.parametrize(
    "error",
    [
        ManifestError("/site/acme/builtin.toml: op.public: is required"),
        BuiltinRegistryError("op pld.tensor.x is implemented twice: by a and by b"),
    ],
    ids=["manifest", "registry"],
)
def test_a_broken_builtin_package_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sample_program: Path,
    error: Exception,
) -> None:
    """The builtin packages load with the op table, on first use: a broken one (its author's
    mistake, named in the message) stops every command that lowers, without a traceback."""

    def front_end_meeting_a_broken_package(path: str) -> tuple[Program, ...]:
        raise error

    monkeypatch.setattr(frontend, "parse_file", front_end_meeting_a_broken_package)
    assert run_cli(capsys, "lower", str(sample_program)) == (
        ExitCode.USAGE_ERROR,
        "",
        f"pypto-build: error: {error}\n",
    )


def test_lower_after_a_pass_prints_the_lowered_program(
    capsys: pytest.CaptureFixture[str], sample_program: Path
) -> None:
    code, out, _ = run_cli(
        capsys, "lower", str(sample_program), "--after", "LowerL2TensorCollectives"
    )
    assert code == 0
    assert "pld.tensor.all_to_all_v" not in out
    assert (
        "data = self.__builtin_all_to_all_v__fp32(stage, data, signal, send_counts, recv_counts, "
        "core_num=4, sync_start=True)" in out
    )


@dataclass(frozen=True)
class _AppendName(Pass):
    """Appends its name to the program's, so the printed class name shows which passes ran."""

    def apply(self, program: Program) -> Program:
        return Program(f"{program.name}_{self.name}", program.functions, program.span)


@dataclass(frozen=True)
class _First(_AppendName):
    name: ClassVar[str] = "First"


@dataclass(frozen=True)
class _Second(_AppendName):
    name: ClassVar[str] = "Second"


@pytest.fixture
def two_pass_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    def default_pipeline(chips: tuple[str, ...] = ()) -> PassManager:
        return PassManager((_First(), _Second()))

    monkeypatch.setattr(passes, "default_pipeline", default_pipeline, raising=False)
    monkeypatch.setattr(lower, "default_pipeline", default_pipeline)


@pytest.mark.parametrize(
    ("after", "program_name"),
    [
        ("First", "MoeDispatch_First"),
        ("Second", "MoeDispatch_First_Second"),
        ("all", "MoeDispatch_First_Second"),
    ],
)
@pytest.mark.usefixtures("two_pass_pipeline")
def test_lower_after_runs_the_pipeline_prefix(
    capsys: pytest.CaptureFixture[str], sample_program: Path, after: str, program_name: str
) -> None:
    code, out, _ = run_cli(capsys, "lower", str(sample_program), "--after", after)
    assert code == 0
    assert f"class {program_name}:" in out


@pytest.mark.usefixtures("two_pass_pipeline")
def test_lower_after_unknown_pass_lists_the_passes(
    capsys: pytest.CaptureFixture[str], sample_program: Path
) -> None:
    code, out, err = run_cli(capsys, "lower", str(sample_program), "--after", "Third")
    assert (code, out) == (ExitCode.USAGE_ERROR, "")
    assert "unknown pass 'Third'; passes (in order): First, Second, all" in err


@dataclass(frozen=True)
class _Unbounded(Pass):
    """Recurses without end, as a pass with a recursive walk may on a large enough program."""

    name: ClassVar[str] = "Unbounded"

    def apply(self, program: Program) -> Program:
        return self.apply(program)


@pytest.mark.parametrize(
    "command",
    [["lower", "--after", "all"], ["render", "--out", "tree"], ["build", "--out", "tree"]],
    ids=["lower", "render", "build"],
)
def test_recursion_error_is_an_internal_error(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sample_program: Path,
    tmp_path: Path,
    command: list[str],
) -> None:
    def unbounded_pipeline(chips: tuple[str, ...] = ()) -> PassManager:
        return PassManager((_Unbounded(),))

    monkeypatch.setattr(passes, "default_pipeline", unbounded_pipeline)
    monkeypatch.setattr(lower, "default_pipeline", unbounded_pipeline)
    monkeypatch.chdir(tmp_path)
    name, *options = command
    code, out, err = run_cli(capsys, name, str(sample_program), *options)
    assert (code, out) == (ExitCode.INTERNAL_ERROR, "")
    assert err.startswith(
        "pypto-build: internal error (a bug in pypto-build, please report it): Python's "
        f"recursion limit ({sys.getrecursionlimit()}) was exceeded in "
    )
    assert err.endswith(
        "._Unbounded.apply; the program is too large or too deeply nested for this part of "
        "pypto-build\n"
    )
    assert err.count("\n") == 1  # no traceback
    assert not (tmp_path / "tree").exists()


def _console_script() -> str:
    return str(Path(sysconfig.get_path("scripts")) / "pypto-build")


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-m", "pypto_build"], [_console_script()]],
    ids=["python -m pypto_build", "pypto-build script"],
)
def test_installed_command_prints_its_version(command: list[str]) -> None:
    done = subprocess.run(
        [*command, "--version"], capture_output=True, text=True, check=False, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"pypto-build {__version__}\n", "")


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    # `pypto-build lower FILE | head -1`: the pipe closes before the output is written.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pypto_build", "lower", str(PROGRAMS / "chip_pipeline.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait() == 0
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr


def test_lower_refuses_an_orchestration_with_two_parameters_of_one_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    program = tmp_path / "dup.py"
    program.write_text(
        "import pypto.language as pl\n\n\n@pl.program\nclass Dup:\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        "    def orch(self, x: pl.Tensor[[4], pl.FP32], x: pl.Tensor[[4], pl.FP32]) -> None:\n"
        "        return None\n",
        encoding="utf-8",
    )
    code, out, err = run_cli(capsys, "lower", str(program), "--after", "all")
    assert (code, out) == (1, "")
    assert err.startswith(f"{program}:7:48: error: duplicate parameter 'x' of 'orch' [frontend]\n")
