"""``pypto-build build``, ``cache`` and ``doctor``, run in-process through ``main``."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support.console import run_cli
from _support.fakes.fake_cann import FakeCann, make_fake_cann, make_fake_pto_isa
from _support.fakes.fake_simpler import commit_all, make_fake_runtime

from pypto_build.chip_build.build import BuildResult
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.ir import Program
from pypto_build.lowering.passes import PassManager
from pypto_build.plugin import project_build
from pypto_build.plugin.cli import ExitCode
from pypto_build.plugin.settings import PyptoSettings, environment_variable
from pypto_build.tree_layout import TreeLayout

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache, an empty home and no toolkit or override variables."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    settings = [environment_variable(field.name) for field in dataclasses.fields(PyptoSettings)]
    for name in (
        "ASCEND_HOME_PATH",
        "ASCEND_TOOLKIT_HOME",
        "ASCEND_OPP_PATH",
        "PTO_ISA_ROOT",
        *settings,
        "CXX",
    ):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path, repo_root: Path) -> Path:
    """A copy of the sample package, built for a3 only to keep the test fast."""
    copy = tmp_path / "moe_a2a"
    shutil.copytree(repo_root / "samples" / "moe_a2a", copy)
    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8").replace('chips = ["a3", "a5"]', 'chips = ["a3"]')
    pyproject.write_text(text, encoding="utf-8")
    return copy


@needs_gxx
def test_build_a_project_then_rebuild_from_the_cache(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "build", str(project), "--jobs", "2")
    # The default output folder lies in the project: its .gitignore lists it, once.
    gitignore = project / ".gitignore"
    assert (code, err) == (
        ExitCode.OK,
        f"pypto-build: listed {project}/build/pypto in {gitignore}: build output stays out of "
        "git and sdists\n",
    )
    assert gitignore.read_text(encoding="utf-8").endswith("\n/build/pypto/\n/build/.pypto.*\n")
    lines = out.splitlines()
    assert lines[0].startswith(f"a3: 4 compiled, 0 from cache -> {project}/build/pypto/a3 (sim ")
    assert lines[1] == f"cache: 0 hits / 4 misses ({tmp_path / 'cache'})"
    code, out, err = run_cli(capsys, "build", str(project), "--json")
    assert err == ""
    document = json.loads(out)
    assert document["chips"]["a3"]["compiled"] == 0
    assert document["chips"]["a3"]["cache_hits"] == 4
    assert document["toolchain"]["name"] == "sim"
    code, out, _ = run_cli(capsys, "cache", "stats", "--json")
    stats = json.loads(out)
    last_build = {"hits": 4, "misses": 0, "remote_hits": 0}
    assert (stats["entries"], stats["last_build"]) == (4, last_build)
    assert stats["bytes"] > 0
    code, out, _ = run_cli(capsys, "cache", "stats")
    assert "last build: 4 hits / 0 misses" in out.splitlines()
    code, out, _ = run_cli(capsys, "cache", "prune", "--all")
    assert code == ExitCode.OK
    assert out.startswith("removed 4 entries (")
    assert json.loads(run_cli(capsys, "cache", "stats", "--json")[1])["entries"] == 0


@needs_gxx
def test_build_a_program_file_for_one_chip(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = project / "src" / "moe_a2a" / "pipelines.py"
    out_dir = tmp_path / "out"
    code, out, _ = run_cli(
        capsys, "build", str(program), "--chip", "a5", "--out", str(out_dir), "--no-cache"
    )
    assert code == ExitCode.OK
    assert out == f"a5: 4 compiled, 0 from cache -> {out_dir}/a5 (sim {_gxx_version()})\n"
    assert (TreeLayout(out_dir / "a5").sub_build("chip_pipeline").orchestration_dir).is_dir()
    assert not (tmp_path / "cache").exists()


@needs_gxx
@pytest.mark.parametrize(
    ("variables", "options", "jobs"),
    [({}, [], 7), ({"PYPTO_JOBS": "3"}, [], 3), ({"PYPTO_JOBS": "3"}, ["--jobs", "2"], 2)],
)
def test_the_engine_runs_jobs_from_the_option_else_pypto_jobs_else_the_machine(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variables: dict[str, str],
    options: list[str],
    jobs: int,
) -> None:
    engine_jobs: list[int] = []

    def engine(paths: object, *, out_dir: Path, jobs: int, **settings: object) -> BuildResult:
        engine_jobs.append(jobs)
        return BuildResult(out_dir, ())

    monkeypatch.setattr(project_build, "build", engine)
    monkeypatch.setattr(project_build, "default_jobs", lambda: 7)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    code, _, _ = run_cli(capsys, "build", str(project), *options)
    assert code == ExitCode.OK
    assert engine_jobs == [jobs]


@needs_gxx
def test_a_build_folder_takes_another_build_and_a_render(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = project / "src" / "moe_a2a" / "pipelines.py"
    out_dir = tmp_path / "out"
    build = ("build", str(program), "--chip", "a3", "--out", str(out_dir))
    for _ in range(2):  # the second build replaces a folder holding the first one's logs
        assert run_cli(capsys, *build)[0] == ExitCode.OK
        assert sorted(p.name for p in out_dir.iterdir()) == [".pypto-build-logs", "a3"]
        assert (out_dir / ".pypto-build-logs" / "a3.log").is_file()
        manifest = json.loads(TreeLayout(out_dir / "a3").manifest.read_text(encoding="utf-8"))
        assert not any(".log" in entry["path"] for entry in manifest["files"])
    code, out, err = run_cli(capsys, "render", *build[1:], "--json")
    assert (code, err) == (ExitCode.OK, "")
    listing = json.loads(out)["chips"]["a3"]
    assert "manifest.json" in listing
    assert not any(".log" in path for path in listing)
    # The render replaced the folder: its logs described binaries that are gone.
    assert sorted(p.name for p in out_dir.iterdir()) == ["a3"]


def _gxx_version() -> str:
    return SimToolchain.discover().version


def test_cann_without_a_toolkit_fails_listing_the_search(
    project: Path, environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "build", str(project), "--toolchain", "cann")
    assert (code, out) == (ExitCode.PROGRAM_ERROR, "")
    assert err.startswith("pypto-build: error: toolchain 'cann' needs a CANN toolkit")
    assert "  ASCEND_HOME_PATH: not set\n" in err
    assert f"  default: {environment}/Ascend/cann: does not exist\n" in err


def test_settings_errors_are_usage_errors(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PYPTO_CHIPS", "a3,a9")
    code, _, err = run_cli(capsys, "build", str(project))
    assert code == ExitCode.USAGE_ERROR
    assert err == (
        "pypto-build: error: PYPTO_CHIPS[1]: unknown chip 'a9'; valid chips: a2, a3, a5\n"
    )
    monkeypatch.delenv("PYPTO_CHIPS")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text(encoding="utf-8").replace('toolchain = "auto"', 'toolchain = "gcc"'),
        encoding="utf-8",
    )
    code, _, err = run_cli(capsys, "build", str(project))
    assert code == ExitCode.USAGE_ERROR
    assert "tool.pypto.toolchain: expected one of 'auto', 'cann', 'sim', got 'gcc'" in err


def test_missing_targets_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "build", str(tmp_path / "nothing"))
    assert (code, err) == (
        ExitCode.USAGE_ERROR,
        f"pypto-build: error: {tmp_path / 'nothing'}: no such file or directory\n",
    )
    code, _, err = run_cli(capsys, "build", str(tmp_path))
    assert code == ExitCode.USAGE_ERROR
    assert "no pyproject.toml" in err
    assert run_cli(capsys, "cache", "prune")[0] == ExitCode.USAGE_ERROR
    assert run_cli(capsys, "build", "--jobs", "0")[0] == ExitCode.USAGE_ERROR


def test_unknown_launcher_is_reported(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "build", str(project), "--launcher", "no-such-launcher")
    assert code == ExitCode.PROGRAM_ERROR
    assert err == "pypto-build: error: compiler launcher 'no-such-launcher' is not on PATH\n"


def test_doctor_with_a_toolkit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    fake = make_fake_cann(tmp_path / "toolkit", "8.5.0.alpha001")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(fake.root))
    monkeypatch.setenv("PTO_ISA_ROOT", str(make_fake_pto_isa(tmp_path)))
    code, out, _ = run_cli(capsys, "doctor", "--json")
    report = json.loads(out)
    assert code == ExitCode.OK
    assert report["auto_toolchain"] == "cann"
    cann = report["cann"]
    assert (cann["found"], cann["version"], cann["origin"]) == (
        True,
        "8.5.0.alpha001",
        "ASCEND_HOME_PATH",
    )
    assert cann["ccec"] == str(fake.root / "bin" / "ccec")
    assert report["pto_isa"] == {
        "root": str(tmp_path / "pto-isa"),
        "origin": "PTO_ISA_ROOT",
        "revision": {"commit": None, "source": f"{tmp_path / 'pto-isa'} is not a git checkout"},
    }
    assert report["runtime"] == {"root": None, "error": "not configured"}
    assert report["cache"] == {"root": str(tmp_path / "cache"), "entries": 0, "bytes": 0}
    assert set(report["launchers"]) == {"ccache", "distcc", "sccache"}
    code, out, _ = run_cli(capsys, "doctor")
    assert (
        out.splitlines()[0] == f"cann: 8.5.0.alpha001 at {fake.root} (found via ASCEND_HOME_PATH)"
    )


@needs_gxx
def test_doctor_without_a_toolkit(
    environment: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(environment)
    code, out, _ = run_cli(capsys, "doctor")
    lines = out.splitlines()
    assert code == ExitCode.OK
    assert lines[:4] == [
        "cann: not found; searched:",
        "  ASCEND_HOME_PATH: not set",
        "  ASCEND_TOOLKIT_HOME: not set",
        "  ASCEND_OPP_PATH (its parent): not set",
    ]
    assert f"  default: {environment}/Ascend/cann: does not exist" in lines
    assert (
        "runtime: not configured (set tool.pypto.runtime-root or PYPTO_RUNTIME_ROOT; toolchain "
        "'cann' needs it)"
    ) in lines
    assert (
        "pto-isa: not configured (set tool.pypto.pto-isa-root or PTO_ISA_ROOT, or "
        "tool.pypto.runtime-root for its managed clone; toolchain 'cann' needs it)"
    ) in lines
    assert any(line.startswith("sim: ") and "g++" in line for line in lines)
    assert lines[-1] == "toolchain 'auto' selects: sim"


# --- CANN builds for a runtime ---------------------------------------------------------------


@pytest.fixture
def cann(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCann:
    """A fake toolkit the CANN toolchain finds through ASCEND_HOME_PATH."""
    fake = make_fake_cann(tmp_path / "toolkit")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(fake.root))
    return fake


def _set_runtime_root(project: Path, value: str) -> None:
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(
        text.replace('toolchain = "auto"', f'toolchain = "auto"\nruntime-root = "{value}"'),
        encoding="utf-8",
    )


def test_doctor_shows_the_runtime_its_folders_and_revisions(
    project: Path,
    cann: FakeCann,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """From the project's settings (a root relative to the project; chips a3: platform a2a3)
    or the option: per platform of the chips, the derived folders and sources and which are
    missing; both revisions; the warning a build would print."""
    runtime = make_fake_runtime(tmp_path)
    head = commit_all(runtime)
    platform_include = runtime / "src/a2a3/platform/include"
    platform_include.rename(tmp_path / "moved")
    _set_runtime_root(project, "../simpler")
    code, out, _ = run_cli(capsys, "doctor", str(project), "--json")
    report = json.loads(out)
    assert code == ExitCode.OK
    assert report["runtime"]["root"] == str(runtime)
    assert report["runtime"]["revision"] == {
        "commit": None,
        "source": f"{runtime} has uncommitted changes",
    }
    [a2a3] = report["runtime"]["platforms"].values()
    assert [entry["exists"] for entry in a2a3["orchestration_include_dirs"]].count(False) == 1
    assert {"path": str(platform_include), "exists": False} in a2a3["orchestration_include_dirs"]
    assert report["pto_isa"]["origin"] == "the runtime's managed clone"
    assert report["binary_context_warning"].startswith(
        "CANN builds write no cache/binary_context.json, as the runtime revision is unknown"
    )
    (tmp_path / "moved").rename(platform_include)
    monkeypatch.chdir(tmp_path)  # no project here: the defaults, every chip
    code, out, _ = run_cli(
        capsys,
        "doctor",
        "--runtime-root",
        str(runtime),
    )
    assert code == ExitCode.OK
    lines = out.splitlines()
    assert f"runtime: {runtime}, revision {head} (git HEAD of {runtime})" in lines
    counts = "10 orchestration include dirs, 3 orchestration sources, 7 kernel include dirs"
    assert f"  a2a3: {counts}; all present" in lines
    assert f"  a5: {counts}; all present" in lines
    pto = runtime / "build" / "pto-isa"
    assert (
        f"pto-isa: {pto} (the runtime's managed clone), revision unknown ({pto} is not a git "
        "checkout)"
    ) in lines
    assert (
        "warning: CANN builds write no cache/binary_context.json, as the PTO-ISA revision is "
        f"unknown ({pto} is not a git checkout); PyPTO's runtime will rebuild their binaries "
        "instead of reusing them (set tool.pypto.pto-isa-revision)"
    ) in lines


def test_doctor_refuses_a_folder_without_a_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "doctor", str(tmp_path))
    assert (code, err) == (
        ExitCode.USAGE_ERROR,
        f"pypto-build: error: {tmp_path}: no pyproject.toml; give a project folder\n",
    )


def test_a_cann_build_needs_a_runtime_root(
    project: Path, cann: FakeCann, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "build", str(project), "--toolchain", "cann")
    assert (code, out) == (ExitCode.PROGRAM_ERROR, "")
    assert err.startswith(
        f"pypto-build: error: toolchain 'cann' (the CANN toolkit at {cann.root}) builds for "
        "PyPTO's runtime, and none is configured: set tool.pypto.runtime-root (or "
        "PYPTO_RUNTIME_ROOT)"
    )


def test_a_cann_build_warns_once_when_it_cannot_record_the_revisions(
    project: Path,
    cann: FakeCann,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    runtime = make_fake_runtime(tmp_path)
    out_dir = tmp_path / "out"
    build = ("build", str(project), "--toolchain", "cann", "--runtime-root", str(runtime))
    code, out, err = run_cli(capsys, *build, "--out", str(out_dir))
    assert code == ExitCode.OK
    assert out.startswith(f"a3: 4 compiled, 0 from cache -> {out_dir}/a3 (cann 8.3.RC1)\n")
    assert err == (
        "pypto-build: warning: CANN builds write no cache/binary_context.json, as the runtime "
        f"revision is unknown ({runtime} is not a git checkout), the PTO-ISA revision is "
        f"unknown ({runtime}/build/pto-isa is not a git checkout); PyPTO's runtime will rebuild "
        "their binaries instead of reusing them (set tool.pypto.runtime-revision and "
        "tool.pypto.pto-isa-revision)\n"
    )
    context = TreeLayout(out_dir / "a3").sub_build("chip_pipeline").binary_context
    assert not context.exists()
    monkeypatch.setenv("PYPTO_RUNTIME_REVISION", "1" * 40)
    monkeypatch.setenv("PYPTO_PTO_ISA_REVISION", "2" * 40)
    code, _, err = run_cli(capsys, *build, "--out", str(out_dir))
    assert (code, err) == (ExitCode.OK, "")
    assert json.loads(context.read_text(encoding="utf-8"))["runtime_revision"] == "1" * 40


@needs_gxx
def test_a_build_needs_no_numpy_and_run_says_how_to_get_it(project: Path, tmp_path: Path) -> None:
    """NumPy is the `sim` extra: a build environment goes without it. Here it cannot be
    imported at all; the build works, and `run` names the extra."""
    blocked = (
        "import sys; sys.modules['numpy'] = None; "
        "from pypto_build.plugin.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYPTO_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    argv = [sys.executable, "-c", blocked]
    build = [*argv, "build", str(project), "--chip", "a3", "--toolchain", "sim", "--out", str(out)]
    done = subprocess.run(build, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    run = [*argv, "run", str(out), "--ranks", "4"]
    done = subprocess.run(run, env=env, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (
        ExitCode.PROGRAM_ERROR,
        "pypto-build: error: run needs NumPy for the simulator: pip install 'pypto-build[sim]'\n",
    )


@needs_gxx
def test_verbose_build_shows_each_compile_and_keeps_the_log(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out_dir = tmp_path / "out"
    code, _, err = run_cli(capsys, "build", str(project), "-v", "--out", str(out_dir))
    assert code == ExitCode.OK
    titles = [line for line in err.splitlines() if line.startswith("pypto-build: a3: ")]
    assert len(titles) == 4
    assert all(title.endswith(" s)") and ": compiled -> " in title for title in titles)
    assert err.count("$ (cd next_levels/") == 8
    # A successful build's log stays beside its trees, outside them.
    log = out_dir / ".pypto-build-logs" / "a3.log"
    assert log.read_text(encoding="utf-8").count("== next_levels/") == 4
    # The setting does the same, and a quiet build prints no command.
    with monkeypatch.context() as patch:
        patch.setenv("PYPTO_VERBOSE", "1")
        _, _, err = run_cli(capsys, "build", str(project), "--out", str(out_dir))
    assert err.count(": cache hit -> ") == 4
    _, _, err = run_cli(capsys, "build", str(project), "--out", str(out_dir))
    assert "$ (cd" not in err


@needs_gxx
def test_added_flags_and_cxxflags_rebuild_and_reach_the_log(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out_dir = tmp_path / "out"
    assert run_cli(capsys, "build", str(project), "--out", str(out_dir))[0] == ExitCode.OK
    log = out_dir / ".pypto-build-logs" / "a3.log"
    monkeypatch.setenv("CXXFLAGS", "-DFROM_CXXFLAGS")
    monkeypatch.setenv("PYPTO_SIM_DEFINES", "FROM_SETTING=1")
    monkeypatch.setenv("PYPTO_BUILD_TYPE", "debug")
    code, out, _ = run_cli(capsys, "build", str(project), "--out", str(out_dir))
    assert code == ExitCode.OK
    assert out.startswith("a3: 4 compiled, 0 from cache")
    text = log.read_text(encoding="utf-8")
    assert text.count("-O0 -g -std=c++17") == 4
    assert text.count("-DFROM_SETTING=1 -DFROM_CXXFLAGS ") == 4
    assert "-DNDEBUG" not in text


@needs_gxx
def test_a_relative_cache_folder_is_taken_from_the_working_folder(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``PYPTO_CACHE_DIR=relcache`` names ``./relcache`` wherever a compile runs: the compiler
    writes its dependency file under the cache's staging folder from its own working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE_DIR", "relcache")
    out_dir = tmp_path / "out"
    code, out, err = run_cli(capsys, "build", str(project), "--chip", "a3", "--out", str(out_dir))
    assert (code, err) == (ExitCode.OK, "")
    assert out.splitlines()[1] == f"cache: 0 hits / 4 misses ({tmp_path / 'relcache'})"
    assert json.loads(run_cli(capsys, "cache", "stats", "--json")[1])["entries"] == 4


@needs_gxx
def test_every_build_brings_the_cache_within_cache_max_size(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, _, err = run_cli(capsys, "build", str(project), "--out", str(tmp_path / "one"))
    assert (code, err) == (ExitCode.OK, "")
    stats = json.loads(run_cli(capsys, "cache", "stats", "--json")[1])
    assert stats["entries"] == 4  # the default bound (5G) keeps them
    monkeypatch.setenv("PYPTO_CACHE_MAX_SIZE", str(stats["bytes"] // 2))
    code, _, err = run_cli(capsys, "build", str(project), "--out", str(tmp_path / "two"))
    assert (code, err) == (ExitCode.OK, "")
    stats_after = json.loads(run_cli(capsys, "cache", "stats", "--json")[1])
    assert 0 < stats_after["entries"] < 4
    assert stats_after["bytes"] <= stats["bytes"] // 2
    entries = tmp_path / "cache" / "v2" / "entries"
    assert [p for p in entries.rglob("*") if p.is_dir() and not any(p.iterdir())] == []


@needs_gxx
def test_a_build_without_chips_lowers_each_program_file_once(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The lowering that finds the default chips is the one the build renders."""
    runs: list[Program] = []
    run = PassManager.run

    def counted(self: PassManager, program: Program, *args: Any, **kwargs: Any) -> Program:
        runs.append(program)
        return run(self, program, *args, **kwargs)

    monkeypatch.setattr(PassManager, "run", counted)
    path = project / "src" / "moe_a2a" / "pipelines.py"
    out_dir = tmp_path / "out"
    code, out, _ = run_cli(capsys, "build", str(path), "--out", str(out_dir), "--no-cache")
    assert code == ExitCode.OK
    assert [line.split(":")[0] for line in out.splitlines()] == ["a2", "a3", "a5"]
    assert [program.name for program in runs] == [program.name for program in parse_file(path)]
