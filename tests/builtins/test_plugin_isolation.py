"""A registered template package is found without importing anything: whatever its parent
package does on import (exit, raise, print) cannot change a build, its own or another
project's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.builtin_distributions import InstallDistribution, installer
from _support.sim_programs import COPY_PAIRS
from _support.tiny_project import write_project

REPO = Path(__file__).resolve().parent.parent.parent
ACME = REPO / "tests" / "third_party" / "acme-collectives" / "acme_collectives"
ALLGATHER_PROGRAM = REPO / "tests" / "third_party" / "programs" / "allgather.py"


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InstallDistribution]:
    steps = installer(tmp_path / "site", monkeypatch)
    yield next(steps)
    next(steps, None)


def pypto_build(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "pypto_build", *argv],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "parent",
    [
        "raise SystemExit(0)\n",
        "raise RuntimeError('acme is broken')\n",
        "import os\nprint('acme loaded')\nos._exit(0)\n",
    ],
    ids=["exits", "raises", "prints-and-ends-the-process"],
)
def test_what_a_plugin_does_on_import_changes_no_build(
    parent: str, install: InstallDistribution, tmp_path: Path
) -> None:
    site = install({"allgather": "acme_collectives.allgather"}, "acme-collectives")
    shutil.copytree(ACME, site / "acme_collectives")
    (site / "acme_collectives" / "__init__.py").write_text(parent, encoding="utf-8")
    (site / "acme_collectives" / "allgather" / "__init__.py").write_text(parent, encoding="utf-8")
    # A project that does not use the op, and one that does.
    tiny = write_project(tmp_path / "tiny")
    done = pypto_build(site, "render", str(tiny), "--out", str(tmp_path / "out"), "--chip", "a3")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("a3: ")
    assert (tmp_path / "out" / "a3").is_dir()
    program = tmp_path / "allgather" / "allgather.py"
    (program.parent / "kernels").mkdir(parents=True)
    shutil.copy(ALLGATHER_PROGRAM, program)
    shutil.copy(COPY_PAIRS, program.parent / "kernels")
    done = pypto_build(site, "render", str(program), "--out", str(tmp_path / "ag"), "--chip", "a3")
    assert (done.returncode, done.stderr) == (0, "")
    assert "acme loaded" not in done.stdout
    assert (tmp_path / "ag" / "a3").is_dir()


def test_a_broken_plugin_is_named_only_by_a_program_that_calls_an_op_of_its(
    install: InstallDistribution, tmp_path: Path
) -> None:
    site = install({"allgather": "acme_collectives.allgather"}, "acme-collectives")
    shutil.copytree(ACME, site / "acme_collectives")
    manifest = site / "acme_collectives" / "allgather" / "builtin.toml"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace("[op]", "[op", 1))
    tiny = write_project(tmp_path / "tiny")
    done = pypto_build(site, "render", str(tiny), "--out", str(tmp_path / "out"), "--chip", "a3")
    assert (done.returncode, done.stderr) == (0, "")
    program = tmp_path / "allgather" / "allgather.py"
    (program.parent / "kernels").mkdir(parents=True)
    shutil.copy(ALLGATHER_PROGRAM, program)
    shutil.copy(COPY_PAIRS, program.parent / "kernels")
    done = pypto_build(site, "render", str(program), "--out", str(tmp_path / "ag"), "--chip", "a3")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"pypto-build: error: {manifest}: not valid TOML: ")
    assert done.stderr.count("\n") == 1
