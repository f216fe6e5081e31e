"""The one error root, :class:`pypto_build.errors.PyptoError`.

Every front end tells a failure of the user's input or machine from a bug with one
``except PyptoError``, so every public exception class of the package must derive from it, the
module that defines it must import nothing of the package (the ``builtins`` leaf and the hatch
hook's import use it), and the command line and the hatch hook must report the same failure
the same way.
"""

from __future__ import annotations

import importlib
import pkgutil
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.builtin_distributions import InstallDistribution, installer
from _support.hatch_projects import build_wheel, hook_environment
from _support.sim_programs import COPY_PAIRS

import pypto_build
from pypto_build.errors import ExitCode, PyptoError, PyptoUsageError
from pypto_build.plugin.cli import main
from pypto_build.plugin.hatch import PyptoBuildError

#: Public exception classes that are not failures of the user's input, each with the reason.
#: Private ones (a leading underscore) are control flow inside their module, caught there, and
#: need no entry.
NOT_USER_ERRORS = {
    # A violated invariant of pypto-build: a bug, which the command line reports as one (exit 3).
    "pypto_build.lowering.diagnostics.InternalError",
    # The simulator's worker process broke its protocol or died as it started: reported as a bug.
    "pypto_build.chip_build.sim.isolation.WorkerError",
    # How the hatch hook hands a PyptoError's message to hatchling: a SystemExit, built from it.
    "pypto_build.plugin.hatch.PyptoBuildError",
}


def _modules() -> Iterator[str]:
    """Every module of the package, but the ``__main__`` ones, which run a command on import."""
    yield pypto_build.__name__
    for module in pkgutil.walk_packages(pypto_build.__path__, f"{pypto_build.__name__}."):
        if not module.name.endswith("__main__"):
            yield module.name


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in the package (warnings apart), by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and not issubclass(value, Warning)
                and value.__module__ == name
            ):
                found[f"{name}.{value.__qualname__}"] = value
    return found


def test_every_public_exception_derives_from_the_root() -> None:
    classes = _exception_classes()
    public = {name: cls for name, cls in classes.items() if not cls.__name__.startswith("_")}
    outside = sorted(
        name
        for name, cls in public.items()
        if not issubclass(cls, PyptoError) and name not in NOT_USER_ERRORS
    )
    assert outside == []
    # The allowed ones exist, and a bug is never reported as the user's failure.
    assert set(public) >= NOT_USER_ERRORS
    assert not any(issubclass(public[name], PyptoError) for name in NOT_USER_ERRORS)


def test_the_root_imports_nothing_of_the_package() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pypto_build.errors; "
            "print(sorted(m for m in sys.modules if m.startswith('pypto_build')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "['pypto_build', 'pypto_build.errors']"


# --- a broken third-party builtin.toml, under the command line and the hatch hook --------------

ACME = Path(__file__).resolve().parent / "third_party" / "acme-collectives" / "acme_collectives"
PROGRAM = ACME.parents[1] / "programs" / "allgather.py"
PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.26", "pypto-build"]
build-backend = "hatchling.build"

[project]
name = "gather"
version = "1.0"

[tool.hatch.build.targets.wheel]
packages = ["gather"]

[tool.hatch.build.targets.wheel.hooks.pypto]

[tool.pypto]
programs = ["gather/allgather.py"]
chips = ["a3"]
package = "gather/_kernels"
"""


@pytest.fixture
def install_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[InstallDistribution]:
    yield from installer(tmp_path / "site", monkeypatch)


@pytest.fixture
def broken_manifest(install_distribution: InstallDistribution) -> Path:
    """acme-collectives, registered with a launch-width rule pypto-build does not have: the
    manifest at fault."""
    site = install_distribution({"allgather": "acme_collectives.allgather"})
    shutil.copytree(ACME, site / ACME.name, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = site / ACME.name / "allgather" / "builtin.toml"
    text = manifest.read_text(encoding="utf-8")
    assert 'launch_width = "exact"' in text
    manifest.write_text(text.replace('launch_width = "exact"', 'launch_width = "ring"'))
    return manifest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model package whose program calls the op of acme-collectives."""
    hook_environment(monkeypatch, tmp_path / "cache", tmp_path / "tmp")
    root = tmp_path / "project"
    (root / "gather" / "kernels").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "gather" / "__init__.py").touch()
    shutil.copyfile(PROGRAM, root / "gather" / PROGRAM.name)
    shutil.copyfile(COPY_PAIRS, root / "gather" / "kernels" / COPY_PAIRS.name)
    return root


def test_a_broken_third_party_manifest_reads_alike_under_the_cli_and_the_hook(
    broken_manifest: Path,
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A usage error naming the manifest from ``pypto-build build``, and the same message, with
    no traceback, from the hook ``pip wheel`` runs."""
    status = main(["build", str(project)])
    captured = capsys.readouterr()
    expected = f"{broken_manifest}: op.launch_width: unknown launch-width rule 'ring'"
    assert (status, captured.out) == (ExitCode.USAGE_ERROR, "")
    assert captured.err.startswith(f"pypto-build: error: {expected}")
    with pytest.raises(PyptoBuildError) as caught:
        build_wheel(project, tmp_path / "dist")
    assert f"pypto-build: error: {caught.value}\n" == captured.err
    assert isinstance(caught.value.__context__, PyptoUsageError)
