"""Opening a built chip tree for the simulator: its sub-builds and its HOST orchestrators.

A compiled tree (``<out>/<chip>``, DESIGN §7) describes itself: ``manifest.json`` names the chip
and the toolchain, each ``next_levels/<name>/kernel_config.py`` lists the orchestration and the
kernels with their binaries beside their sources, and ``orchestration/<host>.py`` is a HOST
orchestrator module written against the L3 API. Only binaries of the ``sim`` toolchain run
here; anything else is an error that says how to build them.

A HOST orchestrator's parameters are read from its module's source: the generated function
binds each tensor parameter as ``name = args[i]`` and each scalar as
``name = <conversion>(args.scalar(j))`` before anything else.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import ModuleType

from pypto_build.chip_build.chips import Chip, get_chip
from pypto_build.chip_build.kernel_config import KernelConfigError, read_kernel_config
from pypto_build.chip_build.manifest import MANIFEST_NAME
from pypto_build.chip_build.sim.runtime import KernelBinary

NEXT_LEVELS = "next_levels"
ORCHESTRATION = "orchestration"
KERNEL_CONFIG = "kernel_config.py"
#: How the generated orchestrator converts each scalar parameter.
SCALAR_CONVERSIONS = ("int", "float", "bool")
#: The toolchain whose binaries the simulator loads, and their suffix.
SIM_TOOLCHAIN = "sim"
BINARY_SUFFIX = ".so"


class BuildTreeError(ValueError):
    """A build directory the simulator cannot run: not a chip tree, not compiled for the
    simulator, or without the requested HOST orchestrator."""


@dataclass(frozen=True)
class SubBuild:
    """One chip callable: ``next_levels/<name>``, compiled."""

    name: str
    #: The orchestration's shared object and entry symbol.
    orchestration: Path
    entry: str
    kernels: tuple[KernelBinary, ...]


@dataclass(frozen=True)
class HostParameter:
    """A parameter of a HOST orchestrator: ``args[index]`` of a tensor, or
    ``args.scalar(index)`` of a scalar converted with ``scalar_type`` (int, float or bool)."""

    name: str
    index: int
    #: None for a tensor parameter.
    scalar_type: str | None

    @property
    def is_tensor(self) -> bool:
        return self.scalar_type is None


@dataclass(frozen=True)
class HostOrchestrator:
    """A HOST orchestrator module of the tree."""

    name: str
    path: Path
    parameters: tuple[HostParameter, ...]

    def load(self) -> ModuleType:
        """Execute the module (it only defines ``NEXT_LEVELS`` and ``build``)."""
        spec = importlib.util.spec_from_file_location(f"pypto_build_host_{self.name}", self.path)
        if spec is None or spec.loader is None:
            raise BuildTreeError(f"{self.path}: not a loadable Python module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attribute in ("NEXT_LEVELS", "build"):
            if not hasattr(module, attribute):
                raise BuildTreeError(f"{self.path}: not a HOST orchestrator (no {attribute})")
        return module


@dataclass(frozen=True)
class ChipBuild:
    """A compiled chip tree."""

    root: Path
    chip: Chip
    sub_builds: Mapping[str, SubBuild]
    hosts: Mapping[str, HostOrchestrator]

    def host(self, name: str | None) -> HostOrchestrator:
        """HOST orchestrator ``name``; without a name, the only one."""
        if name is None:
            if len(self.hosts) == 1:
                return next(iter(self.hosts.values()))
            if not self.hosts:
                raise BuildTreeError(
                    f"{self.root} has no HOST orchestrator ({ORCHESTRATION}/<name>.py); the "
                    "simulator runs a program through its HOST orchestrator"
                )
            raise BuildTreeError(
                f"{self.root} has several HOST orchestrators ({', '.join(self.hosts)}); name one"
            )
        try:
            return self.hosts[name]
        except KeyError:
            known = ", ".join(self.hosts) or "none"
            raise BuildTreeError(
                f"{self.root} has no HOST orchestrator '{name}' (it has: {known})"
            ) from None

    def sub_build(self, name: str) -> SubBuild:
        try:
            return self.sub_builds[name]
        except KeyError:
            raise BuildTreeError(f"{self.root} has no sub-build {NEXT_LEVELS}/{name}") from None


def open_chip_build(build_dir: Path, chip: str | None = None) -> ChipBuild:
    """The chip tree of ``build_dir``: ``build_dir`` itself if it is one (it holds a
    ``manifest.json``), else its ``<chip>`` folder — the only one when ``chip`` is None."""
    root = _chip_root(Path(build_dir), chip)
    manifest = _read_manifest(root)
    chip_name = manifest.get("chip")
    if not isinstance(chip_name, str):
        raise BuildTreeError(f"{root / MANIFEST_NAME} names no chip")
    if chip is not None and chip != chip_name:
        raise BuildTreeError(f"{root} is a tree of chip {chip_name}, not {chip}")
    toolchain = manifest.get("toolchain")
    toolchain_name = toolchain.get("name") if isinstance(toolchain, dict) else None
    if toolchain_name != SIM_TOOLCHAIN:
        state = (
            "holds sources only"
            if toolchain_name == "none"
            else f"was compiled with toolchain {toolchain_name!r}"
        )
        raise BuildTreeError(
            f"{root} {state}; the simulator runs binaries of the {SIM_TOOLCHAIN!r} toolchain "
            f"(build with toolchain = {SIM_TOOLCHAIN!r})"
        )
    next_levels = root / NEXT_LEVELS
    sub_builds = {
        path.parent.name: _sub_build(path.parent)
        for path in sorted(next_levels.glob(f"*/{KERNEL_CONFIG}"))
    }
    hosts = {
        path.stem: HostOrchestrator(path.stem, path, read_host_parameters(path))
        for path in sorted((root / ORCHESTRATION).glob("*.py"))
    }
    return ChipBuild(root, get_chip(chip_name), sub_builds, hosts)


def _chip_root(build_dir: Path, chip: str | None) -> Path:
    if (build_dir / MANIFEST_NAME).is_file():
        return build_dir
    if chip is not None:
        if (build_dir / chip / MANIFEST_NAME).is_file():
            return build_dir / chip
        raise BuildTreeError(f"{build_dir} has no tree for chip {chip} ({chip}/{MANIFEST_NAME})")
    chips = sorted(path.parent.name for path in build_dir.glob(f"*/{MANIFEST_NAME}"))
    if len(chips) == 1:
        return build_dir / chips[0]
    if not chips:
        raise BuildTreeError(f"{build_dir} is not a build directory (no <chip>/{MANIFEST_NAME})")
    raise BuildTreeError(f"{build_dir} holds trees for chips {', '.join(chips)}; choose one")


def _read_manifest(root: Path) -> dict[str, object]:
    try:
        document = json.loads((root / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildTreeError(f"{root / MANIFEST_NAME}: unreadable: {exc}") from None
    if not isinstance(document, dict):
        raise BuildTreeError(f"{root / MANIFEST_NAME}: not a manifest")
    return document


def _sub_build(root: Path) -> SubBuild:
    try:
        config = read_kernel_config(root / KERNEL_CONFIG)
    except KernelConfigError as exc:
        raise BuildTreeError(str(exc)) from None
    if config.orchestration is None:
        raise BuildTreeError(f"{root / KERNEL_CONFIG} lists no ORCHESTRATION")
    orchestration = root / PurePosixPath(config.orchestration.source).with_suffix(BINARY_SUFFIX)
    _require_binary(orchestration, root)
    kernels = []
    for kernel in config.kernels:
        if kernel.binary is None:
            raise BuildTreeError(
                f"{root / KERNEL_CONFIG}: kernel '{kernel.name}' has no binary (not compiled)"
            )
        binary = root / kernel.binary
        _require_binary(binary, root)
        kernels.append(KernelBinary(kernel.func_id, kernel.name, kernel.core_type, binary))
    return SubBuild(root.name, orchestration, config.orchestration.function_name, tuple(kernels))


def _require_binary(path: Path, root: Path) -> None:
    if path.suffix != BINARY_SUFFIX or not path.is_file():
        raise BuildTreeError(f"{root}: {path.relative_to(root)} is missing (not compiled)")


def read_host_parameters(path: Path) -> tuple[HostParameter, ...]:
    """The parameters of the HOST orchestrator module at ``path`` (see the module)."""
    try:
        module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise BuildTreeError(f"{path}: unreadable HOST orchestrator: {exc}") from None
    build = next(
        (
            node
            for node in module.body
            if isinstance(node, ast.FunctionDef) and node.name == "build"
        ),
        None,
    )
    inner = (
        None
        if build is None
        else next((node for node in build.body if isinstance(node, ast.FunctionDef)), None)
    )
    if inner is None:
        raise BuildTreeError(f"{path}: not a HOST orchestrator (no build() returning a function)")
    parameters = []
    for statement in inner.body:
        parameter = _binding(statement)
        if parameter is None:
            break
        parameters.append(parameter)
    return tuple(parameters)


def _binding(statement: ast.stmt) -> HostParameter | None:
    """``name = args[i]`` or ``name = conversion(args.scalar(j))``; None for anything else."""
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        return None
    name, value = statement.targets[0].id, statement.value
    if (
        isinstance(value, ast.Subscript)
        and _is_args(value.value)
        and isinstance(value.slice, ast.Constant)
        and type(value.slice.value) is int
    ):
        return HostParameter(name, value.slice.value, None)
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in SCALAR_CONVERSIONS
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Call)
    ):
        scalar = value.args[0]
        if (
            isinstance(scalar.func, ast.Attribute)
            and scalar.func.attr == "scalar"
            and _is_args(scalar.func.value)
            and len(scalar.args) == 1
            and isinstance(scalar.args[0], ast.Constant)
            and type(scalar.args[0].value) is int
        ):
            return HostParameter(name, scalar.args[0].value, value.func.id)
    return None


def _is_args(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "args"
