"""Fixtures for the builtin template package tests: throwaway packages, renders and C++ builds."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from pypto_build.builtins import BuiltinPackage, include_dir, render, resolve

INDEXED_ALL_TO_ALL_V = ":pypto.runtime.builtins.collectives.indexed_all_to_all_v"

HARNESS = Path(__file__).resolve().parent / "kernel_harness.cpp"

#: A complete manifest of a one-template package, the base the manifest-error tests mutate.
MINIMAL_MANIFEST = """\
handle = ":acme.kernels.copy"
core_type = "aiv"
chips = ["a5"]
rails = ["chip"]

[op]
public = "pld.tensor.copy"
builtin = "builtin.tensor.copy"
launch_width = "exact"

[[operands]]
name = "source"
role = "source"
direction = "In"
window = false
remote = false
dtype = "payload"
shapes = [["N"]]

[dtypes.fp32]
dtype_cpp = "float"

[abi]
tensor_count = 1
ctx_slot = 1

[abi.entry]
scalars = []
ordering_token = false

[templates."kernel.cpp.in"]
variables = ["dtype_cpp"]
"""

MINIMAL_TEMPLATES = {"kernel.cpp.in": "using T = {{ dtype_cpp }};\n"}

MakePackage = Callable[..., Path]


@pytest.fixture
def minimal_manifest() -> str:
    """A complete one-operand, one-template manifest (handle ``:acme.kernels.copy``)."""
    return MINIMAL_MANIFEST


@pytest.fixture
def make_package(tmp_path: Path) -> MakePackage:
    """Write a package folder ``tmp_path/<folder>`` with a manifest and templates."""

    def make(
        folder: str = "acme_copy",
        manifest: str = MINIMAL_MANIFEST,
        templates: Mapping[str, str] | None = None,
    ) -> Path:
        root = tmp_path / folder
        (root / "templates").mkdir(parents=True)
        (root / "builtin.toml").write_text(manifest)
        for name, text in (MINIMAL_TEMPLATES if templates is None else templates).items():
            (root / "templates" / name).write_text(text)
        return root

    return make


def _template_variables(package: BuiltinPackage, template: str, dtype: str) -> dict[str, str]:
    entry = f"builtin_tensor_{package.package.rsplit('.', 1)[1]}__{dtype}"
    available = {
        "template_package": package.package,
        **package.dtype_variables(dtype),
        "entry": entry,
        "kernel_name": f"{entry}_kernel",
        "launch_core_count_method": "set_block_num",
        "runtime": "tensormap_and_ringbuffer",
    }
    return {name: available[name] for name in package.template_spec(template).variables}


VariablesFor = Callable[[BuiltinPackage, str, str], dict[str, str]]


@pytest.fixture(scope="session")
def variables_for() -> VariablesFor:
    """The variables a backend passes to one of our templates for a dtype variant."""
    return _template_variables


@pytest.fixture(scope="session")
def gxx() -> str:
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("g++ is not installed")
    return compiler


def _compile(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr}"


@pytest.fixture(scope="session")
def compile_cxx() -> Callable[[list[str]], None]:
    """Run a compiler command; on failure the assertion shows the diagnostics."""
    return _compile


@pytest.fixture(scope="session")
def kernel_harness(
    tmp_path_factory: pytest.TempPathFactory, gxx: str
) -> Callable[[str, str], Path]:
    """Build (once per session) the multi-rank harness around a rendered kernel variant."""
    built: dict[tuple[str, str], Path] = {}

    def build(handle: str, dtype: str) -> Path:
        if (handle, dtype) not in built:
            package = resolve(handle)
            folder = tmp_path_factory.mktemp("harness")
            kernel = folder / "kernel.cpp"
            variables = _template_variables(package, "kernel.cpp.in", dtype)
            kernel.write_text(render(package, "kernel.cpp.in", variables))
            binary = folder / "harness"
            _compile(
                [
                    gxx,
                    "-std=c++17",
                    "-O1",
                    "-pthread",
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    f"-DPAYLOAD_T={variables['dtype_cpp']}",
                    f"-DINDEXED={int(handle == INDEXED_ALL_TO_ALL_V)}",
                    "-I",
                    str(include_dir()),
                    str(HARNESS),
                    str(kernel),
                    "-o",
                    str(binary),
                ]
            )
            built[(handle, dtype)] = binary
        return built[(handle, dtype)]

    return build
