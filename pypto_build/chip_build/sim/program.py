"""Opening a built chip tree for the simulator: its sub-builds and its HOST orchestrators.

A compiled tree (``<out>/<chip>``, DESIGN §7) describes itself: ``manifest.json`` names the chip
and the toolchain, each ``next_levels/<name>/kernel_config.py`` lists the orchestration and the
kernels with their binaries beside their sources, and ``orchestration/<host>.py`` is a HOST
orchestrator module written against the L3 API. Only binaries of the ``sim`` toolchain run
here; anything else is an error that says how to build them.

A HOST orchestrator's parameters come from its module's ``PARAMETERS`` table, read from the
syntax tree as our tools read every generated file: opening a tree lists the parameters of each
of its orchestrators, so inputs are checked and outputs allocated before anything runs, and the
module itself is executed only for the one program that is run.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from pypto_build.chip_build.chips import Chip, get_chip
from pypto_build.chip_build.kernel_config import KernelConfigError, read_kernel_config
from pypto_build.chip_build.l3_api import DataType, Parameter
from pypto_build.chip_build.manifest import MANIFEST_NAME
from pypto_build.chip_build.sim.runtime import KernelBinary

NEXT_LEVELS = "next_levels"
ORCHESTRATION = "orchestration"
KERNEL_CONFIG = "kernel_config.py"
#: The table of a HOST orchestrator module that lists its parameters.
PARAMETERS = "PARAMETERS"
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
class HostOrchestrator:
    """A HOST orchestrator module of the tree."""

    name: str
    path: Path
    parameters: tuple[Parameter, ...]

    def load(self) -> ModuleType:
        """Execute the module (it only defines ``NEXT_LEVELS``, ``PARAMETERS`` and ``build``)."""
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
    if config.orchestration.binary is None:
        raise BuildTreeError(
            f"{root / KERNEL_CONFIG}: the orchestration has no binary (not compiled)"
        )
    orchestration = root / config.orchestration.binary
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


def read_host_parameters(path: Path) -> tuple[Parameter, ...]:
    """The ``PARAMETERS`` table of the HOST orchestrator module at ``path``, without running the
    module; anything but the literal table the code generator writes is an error."""
    try:
        module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise BuildTreeError(f"{path}: unreadable HOST orchestrator: {exc}") from None
    table = _assigned_value(module, PARAMETERS)
    if table is None:
        raise BuildTreeError(
            f"{path}: not a HOST orchestrator of this pypto-build (no {PARAMETERS} table); "
            "build it again"
        )
    if not isinstance(table, ast.Tuple):
        raise BuildTreeError(f"{path}:{table.lineno}: {PARAMETERS} must be a tuple literal")
    parameters = tuple(_parameter(path, entry) for entry in table.elts)
    names = [parameter.name for parameter in parameters]
    if len(set(names)) != len(names):
        raise BuildTreeError(f"{path}:{table.lineno}: {PARAMETERS} names a parameter twice")
    return parameters


def _assigned_value(module: ast.Module, name: str) -> ast.expr | None:
    """The value a top-level statement assigns to ``name`` (plain or annotated)."""
    for statement in module.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in statement.targets
        ):
            return statement.value
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.target.id == name
        ):
            return statement.value
    return None


def _parameter(path: Path, node: ast.expr) -> Parameter:
    """``Parameter("name", "kind", (dims...), DataType.MEMBER, "direction")``."""
    where = f"{path}:{node.lineno}"
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Parameter"
        and len(node.args) == 5
        and not node.keywords
    ):
        raise BuildTreeError(f"{where}: a {PARAMETERS} entry must be Parameter(<5 literals>)")
    name_node, kind_node, shape_node, dtype_node, direction_node = node.args
    try:
        name, kind, shape, direction = (
            ast.literal_eval(field) for field in (name_node, kind_node, shape_node, direction_node)
        )
    except (ValueError, TypeError):
        raise BuildTreeError(f"{where}: a {PARAMETERS} entry holds a non-literal field") from None
    if not (isinstance(name, str) and name.isidentifier()):
        raise BuildTreeError(f"{where}: parameter name {name!r} is not an identifier")
    if not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)):
        raise BuildTreeError(f"{where}: shape {shape!r} of {name} is not a tuple of sizes")
    if not (
        isinstance(dtype_node, ast.Attribute)
        and isinstance(dtype_node.value, ast.Name)
        and dtype_node.value.id == "DataType"
        and dtype_node.attr in DataType.__members__
    ):
        raise BuildTreeError(f"{where}: the element type of {name} is not DataType.<member>")
    try:
        return Parameter(name, kind, shape, DataType[dtype_node.attr], direction)
    except ValueError as exc:
        raise BuildTreeError(f"{where}: {exc}") from None
