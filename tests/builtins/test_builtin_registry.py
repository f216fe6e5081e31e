"""The builtin registry: our packages, handle errors, third-party packages via entry points."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _support.builtin_distributions import (
    InstallDistribution,
    installer,
    write_python_package,
)

from pypto_build.builtins import (
    ENTRY_POINT_GROUP,
    BuiltinRegistry,
    BuiltinRegistryError,
    Direction,
    UnknownBuiltinError,
    all_packages,
    default_registry,
    include_dir,
    resolve,
)

A2AV = ":pypto.runtime.builtins.collectives.all_to_all_v"
INDEXED = ":pypto.runtime.builtins.collectives.indexed_all_to_all_v"
MC2 = ":pypto.runtime.builtins.mc2.batch_matmul_reduce_scatter_all_to_all"
BUILTINS_DIR = Path(__file__).resolve().parents[2] / "pypto_build" / "builtins"


@pytest.fixture
def fresh_default_registry() -> Iterator[None]:
    """Rediscover the process-wide registry around a test that changes the environment."""
    default_registry.cache_clear()
    yield
    default_registry.cache_clear()


@pytest.fixture
def install_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_default_registry: None
) -> Iterator[InstallDistribution]:
    """Put a fake installed distribution on ``sys.path`` whose entry points name ``value``s."""
    yield from installer(tmp_path / "site", monkeypatch)


def test_our_packages_are_registered_under_upstream_handles() -> None:
    packages = all_packages()
    assert [package.handle for package in packages] == [A2AV, INDEXED, MC2]
    assert [package.root for package in packages] == [
        BUILTINS_DIR / "collectives" / "all_to_all_v",
        BUILTINS_DIR / "collectives" / "indexed_all_to_all_v",
        BUILTINS_DIR / "mc2" / "batch_matmul_reduce_scatter_all_to_all",
    ]


def test_all_to_all_v_manifest() -> None:
    package = resolve(A2AV)
    assert package.package == "pypto.runtime.builtins.collectives.all_to_all_v"
    assert (package.public_op, package.builtin_op) == (
        "pld.tensor.all_to_all_v",
        "builtin.tensor.all_to_all_v",
    )
    assert (package.core_type, package.chips, package.rails) == (
        "aiv",
        ("a2", "a3", "a5"),
        ("host", "chip", "incore"),
    )
    operands = [(op.name, op.direction, op.window, op.remote, op.dtype) for op in package.operands]
    assert operands == [
        ("input", Direction.IN, False, False, "payload"),
        ("target", Direction.INOUT, True, True, "payload"),
        ("signal", Direction.INOUT, True, True, "int32"),
        ("send_counts", Direction.IN, False, True, "int32"),
        ("recv_counts", Direction.INOUT, True, False, "int32"),
    ]
    assert [op.role for op in package.operands if op.role == "result"] == ["result"]
    assert package.dtype_variables("fp32") == {"dtype_cpp": "float"}
    assert package.dtype_variables("int8") == {"dtype_cpp": "int8_t"}
    assert (package.abi.tensor_count, package.abi.ctx_slot) == (5, 5)
    assert package.abi.entry.scalars == ("nranks", "comm_context", "core_num")
    assert (
        package.abi.tensor_count
        + int(package.abi.entry.ordering_token)
        + len(package.abi.entry.scalars)
        == 9
    )
    assert {spec.name: spec.variables for spec in package.templates} == {
        "entry.cpp.in": ("template_package", "dtype_cpp", "entry", "launch_core_count_method"),
        "kernel.cpp.in": ("template_package", "dtype_cpp"),
        "kernel_config.py.in": ("runtime", "entry", "kernel_name"),
    }


def test_indexed_all_to_all_v_manifest() -> None:
    package = resolve(INDEXED)
    assert package.public_op == "pld.tensor.indexed_all_to_all_v"
    assert (package.chips, package.rails) == (("a5",), ("chip",))
    assert [op.name for op in package.operands] == [
        "input",
        "target",
        "signal",
        "send_counts",
        "recv_counts",
        "index",
    ]
    assert [op.name for op in package.operands if op.window] == ["target", "signal", "send_counts"]
    assert (package.abi.tensor_count, package.abi.ctx_slot) == (6, 6)
    assert (
        package.abi.tensor_count
        + int(package.abi.entry.ordering_token)
        + len(package.abi.entry.scalars)
        == 10
    )


def test_unsupported_dtype_names_the_supported_ones() -> None:
    with pytest.raises(LookupError, match="does not support dtype 'bf16'; it has: fp32, int8"):
        resolve(A2AV).dtype_variables("bf16")


def test_handle_without_colon_is_rejected_with_the_upstream_message() -> None:
    with pytest.raises(ValueError) as error:
        resolve("pypto.runtime.builtins.collectives.all_to_all_v")
    assert str(error.value) == (
        "builtin template_dir must be a package-resource handle, "
        "got 'pypto.runtime.builtins.collectives.all_to_all_v'"
    )


def test_unknown_handle_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownBuiltinError) as error:
        resolve(":pypto.runtime.builtins.collectives.allgather")
    message = str(error.value)
    assert "unknown builtin template_dir ':pypto.runtime.builtins.collectives.allgather'" in message
    assert f"registered: {A2AV}, {INDEXED}" in message
    assert f"entry-point group '{ENTRY_POINT_GROUP}'" in message


def test_handles_are_names_not_import_paths_or_folders(make_package: Callable[..., Path]) -> None:
    folder = make_package()
    for handle in (":pypto_build.builtins.collectives.all_to_all_v", f":{folder}"):
        with pytest.raises(UnknownBuiltinError):
            resolve(handle)


def test_entry_point_registers_a_third_party_package(
    install_distribution: InstallDistribution, minimal_manifest: str
) -> None:
    site = install_distribution({"copy": "acme_builtins.copy"})
    folder = write_python_package(site, "acme_builtins.copy")
    (folder / "builtin.toml").write_text(minimal_manifest)
    (folder / "templates").mkdir()
    (folder / "templates" / "kernel.cpp.in").write_text("using T = {{ dtype_cpp }};\n")

    package = resolve(":acme.kernels.copy")
    assert package.root == folder.resolve()
    assert package.template("kernel.cpp.in") == b"using T = {{ dtype_cpp }};\n"
    assert default_registry().handles() == (":acme.kernels.copy", A2AV, INDEXED, MC2)


def test_entry_point_naming_a_missing_package(install_distribution: InstallDistribution) -> None:
    install_distribution({"ghost": "acme_missing.kernels"})
    with pytest.raises(BuiltinRegistryError) as error:
        BuiltinRegistry.discover().require_none_broken()
    message = str(error.value)
    assert "entry point ghost = 'acme_missing.kernels' of distribution acme-builtins" in message
    assert "acme_missing" in message


def test_a_broken_registration_is_set_aside_and_named_when_asked_for(
    install_distribution: InstallDistribution,
) -> None:
    """Discovery does not fail on a third party's broken registration: ours still resolve, and
    the error is raised by whoever needs an op no loaded package implements."""
    install_distribution({"ghost": "acme_missing.kernels"})
    registry = BuiltinRegistry.discover()
    assert registry.handles() == (A2AV, INDEXED, MC2)
    assert len(registry.broken) == 1 and "acme_missing" in registry.broken[0]
    with pytest.raises(BuiltinRegistryError, match="acme_missing"):
        registry.resolve(":acme.kernels.copy")


def test_entry_point_naming_a_module(install_distribution: InstallDistribution) -> None:
    site = install_distribution({"mod": "acme_module"})
    (site / "acme_module.py").write_text('"""Not a package."""\n')
    with pytest.raises(BuiltinRegistryError, match="'acme_module' is a module, not a package"):
        BuiltinRegistry.discover().require_none_broken()


def test_entry_point_naming_an_object_is_code(install_distribution: InstallDistribution) -> None:
    """An object (``module:attr``) is a contract or launch-width rule: listed, never imported
    here (the lowering loads it when a manifest names it, ``test_code_entry_points.py``)."""
    install_distribution({"obj": "acme_pkg:builtin"})
    registry = BuiltinRegistry.discover()
    registry.require_none_broken()
    assert [(entry.name, entry.value) for entry in registry.code] == [("obj", "acme_pkg:builtin")]
    assert "acme_pkg" not in sys.modules


def test_entry_point_folder_without_manifest(install_distribution: InstallDistribution) -> None:
    site = install_distribution({"empty": "acme_empty"})
    write_python_package(site, "acme_empty")
    with pytest.raises(BuiltinRegistryError, match=r"holding builtin\.toml, found 0"):
        BuiltinRegistry.discover().require_none_broken()


def test_extra_roots_are_searched_recursively(make_package: Callable[..., Path]) -> None:
    root = make_package(folder="vendor/kernels/copy")
    registry = BuiltinRegistry.discover(extra_roots=[root.parents[1]])
    assert registry.resolve(":acme.kernels.copy").root == root.resolve()
    assert registry.handles() == (":acme.kernels.copy", A2AV, INDEXED, MC2)


def test_a_handle_declared_twice_is_refused(
    make_package: Callable[..., Path], minimal_manifest: str
) -> None:
    first = make_package(folder="one")
    second = make_package(folder="two")
    with pytest.raises(BuiltinRegistryError) as error:
        BuiltinRegistry.discover(extra_roots=[first, second])
    assert str(error.value) == (
        f"builtin handle :acme.kernels.copy is declared twice: by {first.resolve()}/builtin.toml "
        f"and by {second.resolve()}/builtin.toml"
    )
    impostor = make_package(
        folder="three", manifest=minimal_manifest.replace(":acme.kernels.copy", A2AV)
    )
    with pytest.raises(BuiltinRegistryError, match="is declared twice"):
        BuiltinRegistry.discover(extra_roots=[impostor])


def test_the_same_folder_found_twice_is_one_package() -> None:
    registry = BuiltinRegistry.discover(extra_roots=[BUILTINS_DIR / "collectives"])
    assert registry.handles() == (A2AV, INDEXED, MC2)


def test_include_dir_holds_the_headers() -> None:
    headers = sorted(path.name for path in (include_dir() / "pypto_build").iterdir())
    assert headers == [
        "all_to_all_v_protocol.h",
        "host_float.h",
        "host_matmul.h",
        "host_mix.h",
        "kernel_abi.h",
        "mix_kernel.h",
        "orchestration.h",
        "portability.h",
    ]


def test_the_builtins_package_is_a_leaf() -> None:
    """Importing it loads nothing else of pypto_build (builtins is a leaf of the layering), but
    ``pypto_build.files``, the package's own reader of input files, which every part uses and
    which imports nothing of pypto_build itself (``tests/test_layering.py``)."""
    script = (
        "import sys, pypto_build.builtins\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('pypto_build'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == [
        "pypto_build",
        "pypto_build.builtins",
        "pypto_build.builtins.manifest",
        "pypto_build.builtins.registry",
        "pypto_build.builtins.render",
        # The error root, which imports nothing either (tests/test_error_root.py).
        "pypto_build.errors",
        "pypto_build.files",
    ]
