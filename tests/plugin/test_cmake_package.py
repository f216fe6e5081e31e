"""The CMake package (``find_package(pypto_build)``, ``pypto_add_kernels``) driven by real CMake
builds of the scikit-build-core sample, and one ``pip wheel`` of it through scikit-build-core."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from pypto_build import __version__
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.chip_build.tree_manifest import verify_manifest
from pypto_build.cmake import cmake_dir
from pypto_build.tree_layout import RELATIVE, SubBuildLayout, TreeLayout

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not on PATH")

SAMPLE = "moe_a2a_skbuild"
FIND = "find_package(pypto_build CONFIG REQUIRED)\n"
PYTHON = Path(sys.executable)
CMAKE_DIR = cmake_dir()
PROGRAM = Path("src/moe_a2a_skbuild/dispatch.py")
KERNEL = Path("src/moe_a2a_skbuild/kernels/pack_rows.cpp")
DESTINATION = "moe_a2a_skbuild/_kernels"
SUB_BUILD = RELATIVE.sub_build("quant_exchange").root.as_posix()
#: Every binary a sim build of the sample puts in a chip tree, relative to it.
BINARIES = (
    f"{SUB_BUILD}/sim/kernels/aiv/__builtin_all_to_all_v__int8.so",
    f"{SUB_BUILD}/sim/kernels/aiv/pack_rows.so",
    f"{SUB_BUILD}/sim/orchestration/quant_exchange.so",
)
#: The generators whose DEPFILE handling differs: Ninja reads the depfile itself, the Makefile
#: generator converts it into make rules.
GENERATORS = [
    pytest.param(name, marks=pytest.mark.skipif(shutil.which(tool) is None, reason=f"no {tool}"))
    for name, tool in (("Ninja", "ninja"), ("Unix Makefiles", "make"))
]
DEFAULT_GENERATOR = "Ninja" if shutil.which("ninja") else "Unix Makefiles"


@pytest.fixture(scope="module")
def build_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of every CMake and pip run: one compile cache for the module (later
    builds hit it) and no PYPTO_* override or compiler choice from the caller."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PYPTO_") and name != "CXX"
    }
    env["PYPTO_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    return env


@pytest.fixture
def sample(tmp_path: Path, repo_root: Path, sim: SimToolchain) -> Path:
    """A private copy of the sample package, so a test can edit and touch its files (``sim``:
    building it needs g++)."""
    copy = tmp_path / SAMPLE
    shutil.copytree(repo_root / "samples" / SAMPLE, copy)
    return copy


def _run(argv: list[str], env: Mapping[str, str]) -> tuple[int, str]:
    """Run ``argv``; its exit status and everything it printed (stderr into stdout)."""
    done = subprocess.run(
        argv,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout


def _configure(
    source: Path,
    build: Path,
    env: Mapping[str, str],
    *defines: str,
    generator: str = DEFAULT_GENERATOR,
) -> None:
    """Configure as a plain CMake user does: the package folder from ``python -m
    pypto_build.cmake`` and this interpreter."""
    code, output = _run(
        [
            "cmake",
            "-S",
            str(source),
            "-B",
            str(build),
            "-G",
            generator,
            f"-Dpypto_build_ROOT={CMAKE_DIR}",
            f"-DPython_EXECUTABLE={PYTHON}",
            *defines,
        ],
        env,
    )
    assert code == 0, output


def _configure_project(
    tmp_path: Path,
    body: str,
    env: Mapping[str, str],
    *,
    python: Path = PYTHON,
    root: Path = CMAKE_DIR,
) -> tuple[int, str]:
    """Configure a project whose CMakeLists.txt is ``body`` after the usual head, with the
    package at ``root``; the exit status and the output, its whitespace runs made one space
    (CMake wraps long messages)."""
    source = tmp_path / "project"
    source.mkdir(exist_ok=True)
    head = "cmake_minimum_required(VERSION 3.20)\nproject(p LANGUAGES NONE)\n"
    (source / "CMakeLists.txt").write_text(head + body, encoding="utf-8")
    argv = ["cmake", "-S", str(source), "-B", str(tmp_path / "build")]
    argv += [f"-Dpypto_build_ROOT={root}", f"-DPython_EXECUTABLE={python}"]
    code, output = _run(argv, env)
    return code, " ".join(output.split())


def _build(build: Path, env: Mapping[str, str]) -> str:
    code, output = _run(["cmake", "--build", str(build)], env)
    assert code == 0, output
    return output


def _stamp(build: Path) -> Path:
    return build / "pypto_build" / "quant_dispatch_kernels" / "build.stamp"


def _assert_chip_tree(tree: Path) -> None:
    """A compiled sim tree of the sample: sources, binaries recorded in kernel_config.py, and a
    manifest that describes the tree exactly."""
    for binary in BINARIES:
        assert (tree / binary).is_file(), binary
    config = read_kernel_config(SubBuildLayout(tree / SUB_BUILD).kernel_config)
    assert sorted((kernel.name, kernel.binary) for kernel in config.kernels) == [
        ("__builtin_all_to_all_v__int8", "sim/kernels/aiv/__builtin_all_to_all_v__int8.so"),
        ("pack_rows", "sim/kernels/aiv/pack_rows.so"),
    ]
    manifest = json.loads(TreeLayout(tree).manifest.read_text(encoding="utf-8"))
    assert manifest["toolchain"]["name"] == "sim"
    assert sorted(manifest["inputs"]) == [
        ":pypto.runtime.builtins.collectives.all_to_all_v/templates/kernel.cpp.in",
        PROGRAM.as_posix(),
        KERNEL.as_posix(),
    ]
    assert verify_manifest(tree) == []


def test_the_entry_point_names_the_folder_of_the_config_file() -> None:
    # What scikit-build-core does for the cmake.root group: load each entry point and set
    # <name>_ROOT to the folder of the package it names.
    (entry_point,) = importlib.metadata.entry_points(group="cmake.root", name="pypto_build")
    assert entry_point.value == "pypto_build.cmake"
    root = Path(str(importlib.resources.files(entry_point.load())))
    assert root == cmake_dir()
    assert (root / "pypto_build-config.cmake").is_file()
    assert (root / "pypto_build-config-version.cmake").is_file()
    printed = subprocess.run(
        [sys.executable, "-m", "pypto_build.cmake"], capture_output=True, text=True, check=True
    )
    assert printed.stdout == f"{cmake_dir()}\n"


def test_the_folder_printed_from_a_checkout_is_the_installed_one(tmp_path: Path) -> None:
    """``python -m`` imports from the working folder first: run in a checkout of pypto-build
    (here a copy of its package), the command still prints the installed package's folder, the
    one the config file accepts; without an installed one it says so."""
    checkout = tmp_path / "checkout"
    shutil.copytree(CMAKE_DIR.parent, checkout / "pypto_build", ignore=_only_cmake)
    argv = [sys.executable, "-m", "pypto_build.cmake"]
    printed = subprocess.run(argv, cwd=checkout, capture_output=True, text=True, check=True)
    assert printed.stdout == f"{CMAKE_DIR}\n"
    alone = subprocess.run(
        [sys.executable, "-S", *argv[1:]], cwd=checkout, capture_output=True, text=True, check=False
    )
    assert alone.returncode == 1
    assert alone.stderr.startswith(f"pypto-build is not installed for {sys.executable}")


def _only_cmake(folder: str, names: list[str]) -> list[str]:
    """Copy the package's __init__.py and cmake/ only."""
    if Path(folder) == CMAKE_DIR.parent:
        return [name for name in names if name not in ("__init__.py", "cmake")]
    return ["__pycache__"] if "__pycache__" in names else []


@pytest.mark.parametrize("generator", GENERATORS)
def test_configure_build_install_then_rebuild_only_on_changed_inputs(
    sample: Path, tmp_path: Path, build_env: dict[str, str], generator: str
) -> None:
    build = tmp_path / "build"
    _configure(sample, build, build_env, "-DPYPTO_TOOLCHAIN=sim", generator=generator)
    output = _build(build, build_env)
    assert "pypto-build: building the kernels of quant_dispatch_kernels" in output
    assert "a3: " in output
    assert "a5: " in output

    prefix = tmp_path / "install"
    code, output = _run(["cmake", "--install", str(build), "--prefix", str(prefix)], build_env)
    assert code == 0, output
    kernels = prefix / DESTINATION
    assert sorted(path.name for path in kernels.iterdir()) == ["a3", "a5"]
    for chip in ("a3", "a5"):
        _assert_chip_tree(kernels / chip)

    stamp = _stamp(build)
    built_at = stamp.stat().st_mtime_ns
    output = _build(build, build_env)
    assert "pypto-build" not in output
    assert stamp.stat().st_mtime_ns == built_at

    # The kernel source reaches the command only through the depfile; the program also
    # through DEPENDS. Each edit runs the build again.
    for edited in (KERNEL, PROGRAM):
        # Strictly newer than the stamp, even on a file system with coarse timestamps.
        later = stamp.stat().st_mtime_ns + 10_000_000
        os.utime(sample / edited, ns=(later, later))
        output = _build(build, build_env)
        assert "pypto-build: building the kernels of quant_dispatch_kernels" in output, edited
        assert stamp.stat().st_mtime_ns > built_at
        built_at = stamp.stat().st_mtime_ns
        assert "pypto-build" not in _build(build, build_env)


def test_a_program_error_fails_the_build_with_its_diagnostic(
    sample: Path, tmp_path: Path, build_env: dict[str, str]
) -> None:
    program = sample / PROGRAM
    text = program.read_text(encoding="utf-8")
    program.write_text(
        text.replace("core_num=CORES\n", "core_num=CORES, lanes=4\n"), encoding="utf-8"
    )
    line = next(
        number
        for number, content in enumerate(program.read_text(encoding="utf-8").splitlines(), 1)
        if "lanes=4" in content
    )
    build = tmp_path / "build"
    _configure(sample, build, build_env, "-DPYPTO_CHIPS=a3")
    code, output = _run(["cmake", "--build", str(build)], build_env)
    assert code != 0
    lines = output.splitlines()
    diagnostic = next(index for index, text in enumerate(lines) if text.startswith(f"{program}:"))
    assert lines[diagnostic].startswith(f"{program}:{line}:"), output
    assert lines[diagnostic].endswith(
        "error: pld.tensor.all_to_all_v() got an unexpected keyword argument 'lanes' [frontend]"
    )
    assert "lanes=4" in lines[diagnostic + 1]
    assert lines[diagnostic + 2].strip() == "^"
    assert not _stamp(build).exists()


def test_the_function_refuses_bad_arguments_at_configure_time(
    tmp_path: Path, build_env: dict[str, str]
) -> None:
    cases = {
        "pypto_add_kernels(k CHIPS a3)": "pypto_add_kernels(k): PROGRAMS names no program file",
        "pypto_add_kernels(k FLAVOUR x PROGRAMS p.py)": "unknown arguments: FLAVOUR;x",
        "pypto_add_kernels(k PROGRAMS ../p.py)": f"{tmp_path}/p.py is not inside",
        "pypto_add_kernels(k PROGRAMS p.py)": f"no program file {tmp_path}/project/p.py",
        "pypto_add_kernels(k PROGRAMS p.py CHIPS)": "no value for CHIPS",
    }
    for call, message in cases.items():
        body = f"{FIND}{call}\n"
        code, output = _configure_project(tmp_path, body, build_env)
        assert code != 0
        assert message in output, output


def test_the_version_file_follows_the_package_version(
    tmp_path: Path, build_env: dict[str, str]
) -> None:
    major, minor, *_ = (int(part) for part in __version__.split("."))
    assert major == 0  # while 0.x, a minor release may break: the minor must match
    accepted = {
        f"{major}": True,
        f"{major}.{minor}": True,
        __version__: True,
        f"{major}.{minor + 1}": False,
        f"{major + 1}.0": False,
        f"{major}.{minor}...{major + 1}.0": True,
        f"{major}.{minor + 1}...<{major + 1}.0": False,
    }
    body = "".join(
        f'find_package(pypto_build {request} CONFIG QUIET)\nmessage("[{request}: '
        '${pypto_build_FOUND}]")\n'
        for request in accepted
    )
    body += 'message("[version: ${pypto_build_VERSION}]")\n'
    code, output = _configure_project(tmp_path, body, build_env)
    assert code == 0, output
    for request, ok in accepted.items():
        assert f"[{request}: {int(ok)}]" in output
    assert f"[version: {__version__}]" in output


def test_an_interpreter_without_this_pypto_build_is_refused(
    tmp_path: Path, build_env: dict[str, str]
) -> None:
    base = Path(sys.base_prefix) / "bin" / "python3"
    # -P as the package runs it: a checkout in the working directory does not count.
    probe = subprocess.run([str(base), "-P", "-c", "import pypto_build"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip(f"{base} imports pypto_build too")
    code, output = _configure_project(tmp_path, FIND, build_env, python=base)
    assert code != 0
    assert f"Python_EXECUTABLE ({base}) cannot run pypto-build:" in output, output
    assert "No module named 'pypto_build')" in output
    assert "Set Python_EXECUTABLE to the interpreter pypto-build is installed for." in output


def test_a_config_of_another_installation_is_refused(
    tmp_path: Path, build_env: dict[str, str]
) -> None:
    other = tmp_path / "other" / "pypto_build"
    shutil.copytree(cmake_dir(), other / "cmake")
    shutil.copy(cmake_dir().parent / "__init__.py", other / "__init__.py")
    code, output = _configure_project(tmp_path, FIND, build_env, root=other / "cmake")
    assert code != 0
    expected = f"imports the pypto-build at {cmake_dir()}, not the one found here ({other}/cmake)"
    assert expected in output, output


@pytest.mark.slow
def test_pip_wheel_through_scikit_build_core(
    sample: Path, tmp_path: Path, build_env: dict[str, str]
) -> None:
    pytest.importorskip("scikit_build_core")
    dist = tmp_path / "dist"
    code, output = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "--no-cache-dir",
            "-w",
            str(dist),
            "-C",
            "cmake.define.PYPTO_TOOLCHAIN=sim",
            str(sample),
        ],
        {**build_env, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert code == 0, output
    (wheel,) = dist.iterdir()
    assert wheel.name.startswith("moe_a2a_skbuild-0.1.0-py3-none-")
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(unpacked)
    assert "moe_a2a_skbuild/dispatch.py" in names
    assert not any(".pypto-build-logs" in name for name in names)
    for chip in ("a3", "a5"):
        _assert_chip_tree(unpacked / DESTINATION / chip)
