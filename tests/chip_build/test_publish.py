"""Publishing survives a kill at any instant: the output folder is always the old tree or the
new one, never missing, and the next build removes whatever a killed one left; two builds into
one folder never interleave.

Each publish step of :mod:`pypto_build.chip_build.publish` is a kill point: the child process
kills itself with SIGKILL there (the module's test hook), with and without the atomic exchange.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from _support.tiny_project import build_argv, pypto_build, render_argv, write_project

from pypto_build.chip_build.publish import KILL_AT_ENV, NO_EXCHANGE_ENV, STEPS
from pypto_build.tree_layout import TreeLayout

#: Steps only the rename-aside path reaches, and the steps it shares with the exchange.
_ASIDE_ONLY = {"moved-aside"}
_SWAP_STEPS = ("swapping", "moved-aside", "swapped", "old-removed")
_Argv = Callable[[Path, Path], list[str]]


def _cases(steps: tuple[str, ...]) -> list[tuple[str, bool]]:
    exchange = [(name, True) for name in steps if name not in _ASIDE_ONLY]
    return exchange + [(name, False) for name in _SWAP_STEPS]


def _manifest(out: Path) -> bytes:
    return TreeLayout(out / "a3").manifest.read_bytes()


@pytest.fixture(scope="module")
def cache_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One compile cache for the module: every build after the first hits."""
    return {"PYPTO_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}


@dataclass(frozen=True)
class _Baseline:
    """A project whose output folder holds version 1, and version 2's manifest."""

    project: Path
    new_manifest: bytes


@pytest.fixture(scope="module")
def baselines(
    tmp_path_factory: pytest.TempPathFactory, cache_env: dict[str, str]
) -> Callable[[_Argv], _Baseline]:
    """Each command's baseline, made once for the module (each test copies the project)."""
    made: dict[str, _Baseline] = {}

    def baseline(argv: _Argv) -> _Baseline:
        if argv.__name__ not in made:
            folder = tmp_path_factory.mktemp(argv.__name__)
            program = write_project(folder / "reference", version=2)
            assert pypto_build(*argv(program, folder / "reference" / "out"), env=cache_env)
            project = folder / "project"
            done = pypto_build(*argv(write_project(project), project / "out"), env=cache_env)
            assert done.returncode == 0, done.stderr
            made[argv.__name__] = _Baseline(project, _manifest(folder / "reference" / "out"))
        return made[argv.__name__]

    return baseline


def _kill_and_recover(
    argv: _Argv, kill_at: str, exchange: bool, tmp_path: Path, baseline: _Baseline
) -> None:
    project = tmp_path / "project"
    shutil.copytree(baseline.project, project)
    out = project / "out"
    old = _manifest(out)
    program = write_project(project, version=2)
    hooks = {KILL_AT_ENV: kill_at, **({} if exchange else {NO_EXCHANGE_ENV: "1"})}
    killed = pypto_build(*argv(program, out), env={**os.environ, **hooks})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    if out.exists():
        assert _manifest(out) in (old, baseline.new_manifest)
    else:
        # Only the rename-aside path has an instant without the folder; the next build puts
        # the old tree back before anything else.
        assert (kill_at, exchange) == ("moved-aside", False)
    again = pypto_build(*argv(program, out))
    assert again.returncode == 0, again.stderr
    assert _manifest(out) == baseline.new_manifest
    assert sorted(path.name for path in project.iterdir()) == ["k.cpp", "out", "tiny.py"]


@pytest.mark.parametrize(
    ("kill_at", "exchange"), _cases(tuple(s for s in STEPS if s != "compiled"))
)
def test_a_render_killed_at_any_step_leaves_the_old_or_new_tree(
    kill_at: str, exchange: bool, tmp_path: Path, baselines: Callable[[_Argv], _Baseline]
) -> None:
    _kill_and_recover(render_argv, kill_at, exchange, tmp_path, baselines(render_argv))


@pytest.mark.slow
@pytest.mark.parametrize(("kill_at", "exchange"), _cases(STEPS))
def test_a_build_killed_at_any_step_leaves_the_old_or_new_tree(
    kill_at: str,
    exchange: bool,
    tmp_path: Path,
    baselines: Callable[[_Argv], _Baseline],
    cache_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYPTO_CACHE_DIR", cache_env["PYPTO_CACHE_DIR"])
    _kill_and_recover(build_argv, kill_at, exchange, tmp_path, baselines(build_argv))


@pytest.mark.parametrize("argv", [render_argv, build_argv], ids=["render", "build"])
def test_builds_into_one_folder_wait_for_each_other(
    argv: _Argv, tmp_path: Path, cache_env: dict[str, str]
) -> None:
    program = write_project(tmp_path / "project")
    out = tmp_path / "project" / "out"
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda _: pypto_build(*argv(program, out), env=cache_env), range(4)))
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr
    assert TreeLayout(out / "a3").manifest.is_file()
    assert sorted(path.name for path in out.parent.iterdir()) == ["k.cpp", "out", "tiny.py"]


def test_an_existing_output_folder_keeps_its_mode(tmp_path: Path) -> None:
    """``--out`` on an existing (empty) private folder leaves it private; a new one gets the
    fixed mode of every tree folder."""
    program = write_project(tmp_path / "p")
    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o700)
    for out in (private, tmp_path / "new"):
        done = pypto_build(*render_argv(program, out))
        assert done.returncode == 0, done.stderr
    assert (private.stat().st_mode & 0o777, (tmp_path / "new").stat().st_mode & 0o777) == (
        0o700,
        0o755,
    )
    assert (private / "a3").stat().st_mode & 0o777 == 0o755
