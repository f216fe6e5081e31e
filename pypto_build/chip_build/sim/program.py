"""Opening a built chip tree for the simulator: its sub-builds and its HOST orchestrator.

A compiled tree (``<out>/<chip>``) describes itself: ``manifest.json`` names the chip
and the toolchain, each ``next_levels/<name>/kernel_config.py`` lists the orchestration (with
its parameters) and the kernels with their binaries, ``orchestration/host_orch.py`` is the HOST
orchestrator, written for PyPTO's runtime, and ``distributed_meta.json`` lists its parameters.
Only binaries of the ``sim`` toolchain run here; anything else is an error that says how to
build them.

A tree's programs are its HOST orchestrator and its chip orchestrations (:meth:`ChipBuild.
program`): a user who wrote only a chip pipeline runs it on every rank without writing a HOST
orchestrator, by its name.

Before anything of a tree is read, the tree is checked against its manifest (every file's
SHA-256, nothing missing, nothing added): a tree is run exactly as it was built, or not at all.
Opening a tree is the one way every front end (``pypto-build run``, :mod:`pypto_build.sim`)
reaches a run, so each gets the check. A tree changed since its build would otherwise run
sources, binaries or parameters no build made, and fail (or pass) for reasons nobody can
reproduce from the inputs.

The parameters are read from ``distributed_meta.json``, so inputs are checked and outputs
allocated before anything runs; the module itself is executed only when the program is run.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from pypto_build.chip_build.chips import Chip, get_chip
from pypto_build.chip_build.distributed_meta import MetaError, Parameter, read_meta
from pypto_build.chip_build.host_orch_codegen import ENTRY_MARKER, RUNS_MARKER
from pypto_build.chip_build.kernel_config import KernelConfigError, OrchestrationParam
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.sim.host_env import HostModuleError, load_host_module
from pypto_build.chip_build.sim.runtime import KernelBinary
from pypto_build.chip_build.stale_tree import warn_if_stale
from pypto_build.chip_build.tree_manifest import verify_manifest
from pypto_build.errors import PyptoUsageError
from pypto_build.tree_layout import (
    HOST_MODULE,
    KERNEL_CONFIG,
    MANIFEST,
    NEXT_LEVELS,
    SUB_BUILD_CONFIGS,
    SubBuildLayout,
    TreeLayout,
)

#: The toolchain whose binaries the simulator loads, and their suffix.
SIM_TOOLCHAIN = "sim"
BINARY_SUFFIX = ".so"


class BuildTreeError(PyptoUsageError, ValueError):
    """A build directory the simulator cannot run: not a chip tree, changed since its build,
    not compiled for the simulator, or without the requested HOST orchestrator."""


@dataclass(frozen=True)
class SubBuild:
    """One chip callable: ``next_levels/<name>``, compiled."""

    name: str
    #: The orchestration's shared object and entry symbol.
    orchestration: Path
    entry: str
    kernels: tuple[KernelBinary, ...]
    #: The orchestration's parameters in argument order (``kernel_config.py``'s ``params``);
    #: empty for a HOST-rail variant, which only a HOST orchestrator dispatches.
    params: tuple[OrchestrationParam, ...] = ()
    #: The rank count its windows were sized for (``kernel_config.py``'s ``ranks``: its
    #: collectives' NR); None when nothing ties them to one.
    ranks: int | None = None


@dataclass(frozen=True)
class HostOrchestrator:
    """The HOST orchestrator of a tree: its module and its parameters."""

    name: str
    path: Path
    parameters: tuple[Parameter, ...]
    #: The ranks the program was written for (distributed_meta.json's devices).
    world_size: int
    #: For the HOST side pypto-build writes for a program without a HOST orchestrator (so that
    #: PyPTO's loader can run it), the chip orchestration it runs on every rank.
    runs: str | None = None

    def load(self) -> ModuleType:
        """Execute the module with the simulator's runtime names (:mod:`.host_env`)."""
        try:
            return load_host_module(self.path)
        except HostModuleError as exc:
            raise BuildTreeError(str(exc)) from None


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
                    f"{self.root} has no HOST orchestrator ({HOST_MODULE}); the "
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

    def program(self, name: str | None) -> HostOrchestrator | SubBuild:
        """The program ``name`` runs: the HOST orchestrator of that name, else the chip
        orchestration (``next_levels/<name>``, run on every rank). Without a name, the tree's
        HOST orchestrator, else its only chip orchestration (also when the tree's HOST side is
        the one pypto-build wrote for PyPTO's loader, which runs that orchestration on every
        rank)."""
        if name in self.hosts or (
            name is None and any(h.runs is None for h in self.hosts.values())
        ):
            return self.host(name)
        runnable = [sub.name for sub in self.sub_builds.values() if sub.params]
        known = f"HOST orchestrators: {', '.join(self.hosts) or 'none'}; chip orchestrations: "
        known += ", ".join(runnable) or "none"
        if name is None:
            if len(runnable) == 1:
                return self.sub_builds[runnable[0]]
            raise BuildTreeError(
                f"{self.root} has no HOST orchestrator; name the chip orchestration to run with "
                f"--program (pypto_build.sim: program=) ({known})"
            )
        sub_build = self.sub_builds.get(name)
        if sub_build is None:
            raise BuildTreeError(f"{self.root} has no program '{name}' ({known})")
        if not sub_build.params:
            raise BuildTreeError(
                f"{TreeLayout(self.root).sub_build(name).root} does not list its parameters in "
                f"{KERNEL_CONFIG} (a HOST-rail collective, which its HOST orchestrator "
                "dispatches, or a tree built by an older pypto-build: build it again)"
            )
        return sub_build

    def sub_build(self, name: str) -> SubBuild:
        try:
            return self.sub_builds[name]
        except KeyError:
            raise BuildTreeError(f"{self.root} has no sub-build {NEXT_LEVELS}/{name}") from None


def open_chip_build(build_dir: Path, chip: str | None = None) -> ChipBuild:
    """The chip tree of ``build_dir``: ``build_dir`` itself if it is one (it holds a
    ``manifest.json``), else its ``<chip>`` folder — the only one when ``chip`` is None."""
    root = _chip_root(Path(build_dir), chip)
    _verify(root)
    manifest = _read_manifest(root)
    warn_if_stale(root, manifest)
    chip_name = manifest.get("chip")
    if not isinstance(chip_name, str):
        raise BuildTreeError(f"{TreeLayout(root).manifest} names no chip")
    if chip is not None and chip != chip_name:
        raise BuildTreeError(f"{root} is a tree of chip {chip_name}, not {chip}")
    toolchain = manifest.get("toolchain")
    toolchain_name = toolchain.get("name") if isinstance(toolchain, dict) else None
    if toolchain_name != SIM_TOOLCHAIN:
        if toolchain_name == "none":
            raise BuildTreeError(
                f"{root} is a render (sources only), not a build; build it first: pypto-build "
                f"build PROJECT --toolchain {SIM_TOOLCHAIN} (or PYPTO_TOOLCHAIN={SIM_TOOLCHAIN} "
                "for a wheel), then run its output folder"
            )
        raise BuildTreeError(
            f"{root} was compiled with toolchain {toolchain_name!r}; the simulator runs binaries "
            f"of the {SIM_TOOLCHAIN!r} toolchain (build with --toolchain {SIM_TOOLCHAIN}, or "
            f"toolchain = {SIM_TOOLCHAIN!r})"
        )
    sub_builds = {
        path.parent.name: _sub_build(path.parent) for path in sorted(root.glob(SUB_BUILD_CONFIGS))
    }
    hosts = {}
    if TreeLayout(root).host_module.is_file():
        host = _host(root)
        hosts[host.name] = host
    return ChipBuild(root, get_chip(chip_name), sub_builds, hosts)


def _no_kernels(build_dir: Path) -> str:
    """The likely cause when ``build_dir`` does not exist at all: a wheel built by
    ``hatchling.build`` without the hook's table ships no kernels (docs/packaging.md)."""
    if build_dir.exists():
        return ""
    return (
        "; if it is a package's kernel folder, its wheel was built without pypto-build's "
        'hook: set build-backend = "pypto_build.backend" in pyproject.toml (or add the '
        "table [tool.hatch.build.targets.wheel.hooks.pypto]) and build it again"
    )


def _chip_root(build_dir: Path, chip: str | None) -> Path:
    if TreeLayout(build_dir).manifest.is_file():
        return build_dir
    if chip is not None:
        if TreeLayout(build_dir / chip).manifest.is_file():
            return build_dir / chip
        raise BuildTreeError(
            f"{build_dir} has no tree for chip {chip} ({chip}/{MANIFEST})" + _no_kernels(build_dir)
        )
    chips = sorted(path.parent.name for path in build_dir.glob(f"*/{MANIFEST}"))
    if len(chips) == 1:
        return build_dir / chips[0]
    if not chips:
        raise BuildTreeError(
            f"{build_dir} is not a build directory (no <chip>/{MANIFEST})" + _no_kernels(build_dir)
        )
    raise BuildTreeError(
        f"{build_dir} holds trees for chips {', '.join(chips)}; choose one with --chip "
        f"(pypto_build.sim: chip=), e.g. --chip {chips[0]}"
    )


#: How a tree that differs from its manifest came to be, and the way out.
_CHANGED = "the tree was modified after it was built; rebuild it"


def _verify(root: Path) -> None:
    """Refuse a tree that differs from its ``manifest.json``, naming each file and what is
    wrong with it."""
    problems = [f"{root / problem.path}: {problem.what}" for problem in verify_manifest(root)]
    if len(problems) == 1:
        raise BuildTreeError(f"{problems[0]} ({_CHANGED})")
    if problems:
        listed = "".join(f"\n  {problem}" for problem in problems)
        raise BuildTreeError(f"{root} differs from its {MANIFEST} ({_CHANGED}):{listed}")


def _read_manifest(root: Path) -> dict[str, object]:
    try:
        document = json.loads(TreeLayout(root).manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildTreeError(f"{TreeLayout(root).manifest}: unreadable: {exc}") from None
    if not isinstance(document, dict):
        raise BuildTreeError(f"{TreeLayout(root).manifest}: not a manifest")
    return document


def _sub_build(root: Path) -> SubBuild:
    try:
        config = read_kernel_config(SubBuildLayout(root).kernel_config)
    except KernelConfigError as exc:
        raise BuildTreeError(str(exc)) from None
    if config.orchestration is None:
        raise BuildTreeError(f"{SubBuildLayout(root).kernel_config} lists no ORCHESTRATION")
    if config.orchestration.binary is None:
        raise BuildTreeError(
            f"{SubBuildLayout(root).kernel_config}: the orchestration has no binary (not compiled)"
        )
    orchestration = root / config.orchestration.binary
    _require_binary(orchestration, root)
    kernels = []
    for kernel in config.kernels:
        if kernel.binary is None:
            raise BuildTreeError(
                f"{SubBuildLayout(root).kernel_config}: kernel '{kernel.name}' has no binary "
                "(not compiled)"
            )
        binary = root / kernel.binary
        _require_binary(binary, root)
        kernels.append(KernelBinary(kernel.func_id, kernel.name, kernel.core_type, binary))
    entry = config.orchestration
    return SubBuild(
        root.name, orchestration, entry.function_name, tuple(kernels), entry.params, entry.ranks
    )


def _require_binary(path: Path, root: Path) -> None:
    if path.suffix != BINARY_SUFFIX or not path.is_file():
        raise BuildTreeError(f"{root}: {path.relative_to(root)} is missing (not compiled)")


def _host(root: Path) -> HostOrchestrator:
    """The tree's HOST orchestrator, named by its entry as ``distributed_meta.json`` places it."""
    tree = TreeLayout(root)
    path = tree.host_module
    try:
        meta = read_meta(tree.distributed_meta)
    except MetaError as exc:
        raise BuildTreeError(
            f"{exc} (the tree's HOST orchestrator needs it; build again)"
        ) from None
    name, runs = _entry(path)
    return HostOrchestrator(name, path, meta.parameters, meta.world_size, runs)


def _entry(path: Path) -> tuple[str, str | None]:
    """The name of the module's entry function, and the chip orchestration it runs on every
    rank if pypto-build wrote it for a program without a HOST orchestrator, read from its syntax
    tree (``<name>._pypto_distributed_entry = True``, ``<name>._pypto_build_runs_on_every_rank
    = "<orchestration>"``), without running the module."""
    try:
        module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise BuildTreeError(f"{path}: unreadable HOST orchestrator: {exc}") from None
    marks = [
        (target.value.id, target.attr, statement.value)
        for statement in module.body
        if isinstance(statement, ast.Assign)
        for target in statement.targets
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
    ]
    names = [name for name, attr, _ in marks if attr == ENTRY_MARKER]
    if len(names) != 1:
        raise BuildTreeError(f"{path}: expected one function marked {ENTRY_MARKER}")
    runs = [
        value.value
        for name, attr, value in marks
        if name == names[0]
        and attr == RUNS_MARKER
        and isinstance(value, ast.Constant)
        and isinstance(value.value, str)
    ]
    return names[0], runs[0] if runs else None
