"""Per-chip sub-build trees: the render half of a build.

A lowered program becomes, for each target chip, a tree that PyPTO's runtime can load as it
loads upstream's build output:

```
<out>/<chip>/next_levels/<chip orchestration>/orchestration/<orch>.cpp
                                             /kernels/{aiv,aic}/<kernel>.cpp
                                             /kernel_config.py
                                             /include/pypto_build/*.h   (headers they include)
<out>/<chip>/next_levels/builtin.tensor.<op>__<dtype>/...      (HOST-rail variants only)
<out>/<chip>/orchestration/host_orch.py                        (the HOST orchestrator, if any)
<out>/<chip>/distributed_meta.json                             (its parameters, for PyPTO)
<out>/<chip>/manifest.json
```

Each CHIP orchestration's sub-build holds the orchestration and every kernel it calls: builtin
kernels rendered from their template package, hand-written kernels (``external_source``, relative to
the program file) copied in, and every header of ours they include, so a tree never refers to a path
outside itself (``docs/runtime-compatibility.md``). A builtin variant appears under ``next_levels/``
only if a HOST orchestrator dispatches it. A tree holds at most one HOST orchestrator: PyPTO's L3
loader runs ``orchestration/host_orch.py`` of a tree.

The tree is a pure function of the programs' text, the external sources and the templates: it
is planned in memory first (:func:`plan_chip`), so a bad program raises before anything is
written, then written into a staging sibling of the output directory that replaces it whole
(:mod:`.publish`).
No absolute path, timestamp or environment-dependent value reaches a file; inputs are recorded in
the manifest by their path relative to the source root.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pypto_build.builtins import BuiltinPackage
from pypto_build.builtins.headers import HeaderFiles, header_closure
from pypto_build.builtins.manifest import KERNEL_TEMPLATE
from pypto_build.chip_build.builtin_variants import (
    ChipBuiltinKernel,
    HostVariant,
    chip_builtin_kernel,
    collective_ranks,
    host_variants,
    kernel_ranks,
    rail_renders,
    window_tail,
)
from pypto_build.chip_build.chips import CHIPS, Chip, get_chip
from pypto_build.chip_build.codegen_base import RUNTIME_DTYPES
from pypto_build.chip_build.distributed_meta import meta_for
from pypto_build.chip_build.host_orch_codegen import (
    HostOrchestrator,
    generate_host_orchestrator,
    generate_rank_adapter,
)
from pypto_build.chip_build.kernel_config import (
    ArgDirection,
    KernelEntry,
    OrchestrationEntry,
    OrchestrationParam,
    ParamKind,
)
from pypto_build.chip_build.kernel_config_writer import render_kernel_config
from pypto_build.chip_build.launch_capacity import BuildWarning, launch_warnings
from pypto_build.chip_build.orchestration_codegen import (
    KernelSlot,
    generate_orchestration,
    kernel_slots,
    orchestration_for_any_chip,
)
from pypto_build.chip_build.publish import replacing, step
from pypto_build.chip_build.render_errors import NoCommonChip, RenderError
from pypto_build.chip_build.tree_manifest import write_manifest
from pypto_build.files import FILE_MODE, read_regular
from pypto_build.gc_pause import pauses_collector
from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import (
    CommCtxType,
    DistributedTensorType,
    Function,
    Program,
    ScalarType,
    TensorType,
)
from pypto_build.lowering.ir.names import external_source
from pypto_build.lowering.legality.shared_trees import check_programs
from pypto_build.lowering.lower import lower_path
from pypto_build.tree_layout import (
    DISTRIBUTED_META,
    HOST_MODULE,
    INCLUDE,
    LOG_DIR,
    MANIFEST,
    RELATIVE,
    RELATIVE_SUB_BUILD,
    TreeLayout,
)

#: The runtime every sub-build targets (its wire name in kernel_config.py).
RUNTIME = "tensormap_and_ringbuffer"
#: The toolchain recorded in the manifest while sub-builds hold sources only.
TOOLCHAIN = "none"


@dataclass(frozen=True)
class SourceProgram:
    """A lowered program and the file it was parsed from (external sources are relative to the
    file's folder)."""

    path: Path
    program: Program


def lower_file(path: Path, chips: Sequence[str]) -> tuple[SourceProgram, ...]:
    """Parse ``path`` and lower its programs for a build targeting ``chips``."""
    return tuple(SourceProgram(path, program) for program in lower_path(path, chips))


def used_packages(program: Program) -> tuple[BuiltinPackage, ...]:
    """The builtin packages ``program`` renders, on either rail, by handle."""
    found: dict[str, BuiltinPackage] = {}
    for func in program.functions:
        builtin = chip_builtin_kernel(func)
        if builtin is not None:
            found[builtin.package.handle] = builtin.package
    for variant in host_variants(program):
        found[variant.package.handle] = variant.package
    return tuple(found[handle] for handle in sorted(found))


def default_chips(path: Path) -> tuple[str, ...]:
    """Every catalog chip that all builtin packages used by the programs of ``path`` support
    (the chips a render targets when none is named)."""
    return lower_for_default_chips(path)[0]


def lower_for_default_chips(path: Path) -> tuple[tuple[str, ...], tuple[SourceProgram, ...]]:
    """:func:`default_chips` of ``path`` and its programs lowered for them, from one lowering.

    The chips a pass is given only refuse (an op or a kernel whose package does not support
    one of them); what it makes does not depend on them. The default chips are those every
    package the programs use supports, so a lowering for them refuses nothing that a lowering
    for no chip in particular does not, and gives the same programs: that lowering, which
    finds the packages, is the result (a large program's lowering costs as much as its render).
    """
    programs = lower_file(path, ())
    packages = [package for source in programs for package in used_packages(source.program)]
    chips = tuple(
        chip.name for chip in CHIPS if all(chip.name in package.chips for package in packages)
    )
    if not chips:
        raise NoCommonChip(
            f"no chip supports every builtin {path} uses "
            f"({', '.join(sorted({package.handle for package in packages}))})"
        )
    return chips, programs


def lower_for_programs_default_chips(
    paths: Sequence[Path],
) -> tuple[tuple[str, ...], tuple[tuple[SourceProgram, ...], ...]]:
    """The chips every file of ``paths`` can be built for (:func:`default_chips` of each, in
    the catalog's order), what a build targets when no chip is named, and each file's programs
    lowered for them, from one lowering per file.

    A file's lowering for its own default chips serves any of them (as
    :func:`lower_for_default_chips` says, a lowering for fewer chips refuses no more and makes
    the same programs), so the build of several files needs no second lowering for the chips
    they share."""
    lowered = [lower_for_default_chips(path) for path in paths]
    supported = [chips for chips, _ in lowered]
    chips = tuple(chip for chip in supported[0] if all(chip in other for other in supported))
    if not chips:
        raise NoCommonChip(
            "no chip supports the builtins of every program file: "
            + "; ".join(
                f"{path}: {', '.join(found)}" for path, found in zip(paths, supported, strict=True)
            )
        )
    return chips, tuple(programs for _, programs in lowered)


@dataclass(frozen=True)
class ChipTree:
    """The planned content of one chip's tree (without its manifest)."""

    chip: str
    #: File bytes by path relative to ``<out>/<chip>``, sorted by path.
    files: Mapping[str, bytes]
    #: SHA-256 of every input, by path relative to the source root (templates: by handle).
    inputs: Mapping[str, str]
    #: What will fail on this chip though the tree is sound (:mod:`.launch_capacity`).
    warnings: tuple[BuildWarning, ...] = ()


@dataclass(frozen=True)
class RenderResult:
    """What :func:`render_subbuilds` wrote."""

    out_dir: Path
    trees: tuple[ChipTree, ...]

    @property
    def warnings(self) -> tuple[BuildWarning, ...]:
        """Every tree's warnings, chip by chip."""
        return tree_warnings(self.trees)

    def paths(self, chip: str) -> tuple[str, ...]:
        """Every file of ``chip``'s tree (its manifest included), relative to ``<out>/<chip>``."""
        for tree in self.trees:
            if tree.chip == chip:
                return tuple(sorted([*tree.files, MANIFEST]))
        raise KeyError(chip)


def render_subbuilds(
    programs: Sequence[SourceProgram],
    chips: Sequence[str],
    out_dir: Path,
    *,
    source_root: Path,
) -> RenderResult:
    """Render ``programs`` into ``out_dir/<chip>`` for each of ``chips``, replacing ``out_dir``.

    ``out_dir`` must be absent, empty or an earlier render tree. Nothing is written when a
    program is wrong: the trees are planned in memory, then published whole
    (:func:`~pypto_build.chip_build.publish.replacing`).
    """
    trees = plan_trees(programs, chips, source_root)
    with replacing(Path(out_dir), check=check_output_folder) as staging:
        write_trees(trees, staging)
    return RenderResult(Path(out_dir), trees)


@pauses_collector
def plan_trees(
    programs: Sequence[SourceProgram], chips: Sequence[str], source_root: Path
) -> tuple[ChipTree, ...]:
    """The tree of each of ``chips`` (:func:`plan_chip`), in memory."""
    reads = _Reads(source_root)
    return tuple(plan_chip(programs, chip, source_root, reads) for chip in _unique(chips))


def plan_chip(
    programs: Sequence[SourceProgram],
    chip: str,
    source_root: Path,
    reads: _Reads | None = None,
) -> ChipTree:
    """The tree of ``chip``: every program's sub-builds, variants and HOST orchestrators;
    ``reads`` is shared by the trees of one render (each input read once)."""
    check_programs([source.program for source in programs])
    target = get_chip(chip)
    plan = _Plan(_Reads(source_root) if reads is None else reads)
    warnings: list[BuildWarning] = []
    for source in programs:
        plan.add_input(source.path)
        _plan_program(plan, source, target)
        warnings += launch_warnings(source.program, target)
    return ChipTree(
        chip,
        dict(sorted(plan.files.items())),
        dict(sorted(plan.inputs.items())),
        tuple(warnings),
    )


def tree_warnings(trees: Sequence[ChipTree]) -> tuple[BuildWarning, ...]:
    """The warnings of ``trees``, in chip order."""
    return tuple(warning for tree in trees for warning in tree.warnings)


# --- planning --------------------------------------------------------------------------------


class _Reads:
    """The inputs one render reads, each once: the program files and external kernels (with
    the key and hash the manifest records), our headers, and the templates' hashes.

    Every sub-build copies the kernels it calls and the headers they include, and every chip
    has its own tree of the same sub-builds: a model of many pipelines names the same few files
    thousands of times. They are inputs of this one render, read as it starts using them.

    It also keeps what each sub-build is on every chip (:class:`_SubBuild`), made for the first
    chip and reused for the others."""

    def __init__(self, source_root: Path) -> None:
        self.source_root = source_root
        self.headers = HeaderFiles()
        self._files: dict[Path, tuple[bytes, str, str]] = {}
        self._templates: dict[tuple[str, str], str] = {}
        self._root: Path | None = None
        #: By the orchestration's identity (the function is kept, so the id is not reused).
        self.sub_builds: dict[int, tuple[Function, _SubBuild]] = {}

    def file(self, path: Path) -> tuple[bytes, str, str]:
        """``path``'s bytes, its key in the manifest's inputs and its SHA-256."""
        found = self._files.get(path)
        if found is None:
            data = read_regular(path)
            found = self._files[path] = (data, self._input_key(path), _sha256(data))
        return found

    def template(self, handle: str, template: str, data: bytes) -> str:
        """The SHA-256 of a builtin package's template (``data``, its bytes)."""
        key = (handle, template)
        digest = self._templates.get(key)
        if digest is None:
            digest = self._templates[key] = _sha256(data)
        return digest

    def _input_key(self, path: Path) -> str:
        if self._root is None:
            self._root = self.source_root.resolve()
        try:
            return path.resolve().relative_to(self._root).as_posix()
        except ValueError:
            raise RenderError(
                f"{path} is not under the source root {self.source_root}: inputs are recorded "
                "by their path relative to it"
            ) from None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Plan:
    """Files and inputs of one chip's tree, and which program claimed each output name."""

    def __init__(self, reads: _Reads) -> None:
        self.reads = reads
        self.files: dict[str, bytes] = {}
        self.inputs: dict[str, str] = {}

    def add(self, path: str, data: bytes) -> None:
        self.files[path] = data

    def add_shared(self, path: str, data: bytes) -> None:
        """A file several programs may produce (a builtin variant): always the same bytes."""
        if self.files.setdefault(path, data) != data:
            raise InternalError(f"two renders of {path} differ")

    def add_input(self, path: Path) -> bytes:
        """Record input ``path`` (a program file or an external source); return its bytes."""
        data, key, digest = self.reads.file(path)
        self.inputs[key] = digest
        return data

    def add_template_input(self, handle: str, template: str, data: bytes) -> None:
        digest = self.reads.template(handle, template, data)
        self.inputs[f"{handle}/templates/{template}"] = digest


def _plan_program(plan: _Plan, source: SourceProgram, chip: Chip) -> None:
    program = source.program
    sub_builds = [f for f in program.functions if f.is_chip_orchestration]
    for orch in sub_builds:
        common = _sub_build(plan, source, orch)
        plan.inputs.update(common.inputs)
        orchestration = generate_orchestration(program, orch, chip).encode()
        for path, data in common.files:
            plan.add(path, orchestration if data is None else data)
    for variant in host_variants(program):
        _plan_variant(plan, variant, chip)
    _check_rail_identity(program, chip)
    names = [f.name for f in sub_builds]
    hosts = [f for f in program.functions if f.is_host_orchestrator]
    for host in hosts:
        generated = generate_host_orchestrator(program, host, names)
        # The world: the NR the collectives are sized for (a world domain's is the world's),
        # and at least every device the program names (a subset domain's NR is its own).
        world = max((generated.devices, *collective_ranks(program)))
        _plan_host(plan, chip, generated, world)
    if not hosts and len(sub_builds) == 1:
        ranks = _sized_for(kernel_slots(program, sub_builds[0]))
        adapter = (
            None
            if ranks is None
            else generate_rank_adapter(sub_builds[0], ranks, window_tail(program))
        )
        if adapter is not None:
            _plan_host(plan, chip, adapter, adapter.devices)


def _plan_host(plan: _Plan, chip: Chip, host: HostOrchestrator, world: int) -> None:
    """The tree's HOST side for PyPTO's L3 loader: the module and ``distributed_meta.json``."""
    plan.add(HOST_MODULE, host.source.encode())
    meta = meta_for(chip, host.parameters, host.returns, world)
    plan.add(DISTRIBUTED_META, meta.render().encode())


def _check_rail_identity(program: Program, chip: Chip) -> None:
    """Every build proves that both rails render the same kernel for each builtin variant the
    program uses: the two renders take their variables from different places (the lowering's
    attr and the package manifest), and a collective must behave alike on both rails."""
    for variant, host_text, chip_text in rail_renders(program, chip, RUNTIME):
        if host_text != chip_text:
            raise RenderError(
                f"{variant}: the HOST and CHIP rails render different kernels for chip "
                f"{chip.name}; run 'pypto-build check-render' for a report of the difference"
            )


def _plan_variant(plan: _Plan, variant: HostVariant, chip: Chip) -> None:
    files = {path: text.encode() for path, text in variant.render(chip, RUNTIME).items()}
    files.update(_travelling_headers(files, plan.reads.headers))
    for path, data in sorted(files.items()):
        plan.add_shared((RELATIVE.sub_build(variant.name).root / path).as_posix(), data)
    for spec in variant.package.templates:
        plan.add_template_input(
            variant.package.handle, spec.name, variant.package.template(spec.name)
        )


@dataclass(frozen=True)
class _SubBuild:
    """A sub-build as every chip has it: only its orchestration's source depends on the chip
    (:func:`generate_orchestration`), so its kernels, headers and ``kernel_config.py`` are made
    once per render, not once per chip."""

    #: Every file by its path in the tree, in order; None for the orchestration's source.
    files: tuple[tuple[str, bytes | None], ...]
    #: The inputs its files were made from (:attr:`_Plan.inputs`).
    inputs: dict[str, str]


def _sub_build(plan: _Plan, source: SourceProgram, orch: Function) -> _SubBuild:
    """The :class:`_SubBuild` of ``orch``, made with the first chip's plan."""
    known = plan.reads.sub_builds.get(id(orch))
    if known is not None and known[0] is orch:
        return known[1]
    own = _Plan(plan.reads)
    files = _chip_sub_build(own, source, orch)
    # Every path of ``files`` is a normalised relative POSIX path (``as_posix`` of the layout's
    # paths), so joining it to the folder's is the text pathlib would make, without a path
    # object per file of every sub-build.
    prefix = RELATIVE.sub_build(orch.name).root.as_posix()
    orchestration = _orchestration_path(orch.name)
    made = _SubBuild(
        tuple(
            (f"{prefix}/{path}", None if path == orchestration else data)
            for path, data in files.items()
        ),
        own.inputs,
    )
    plan.reads.sub_builds[id(orch)] = (orch, made)
    return made


def _chip_sub_build(plan: _Plan, source: SourceProgram, orch: Function) -> dict[str, bytes]:
    """The files of ``orch``'s sub-build, by path relative to it; its orchestration's source
    is the one for any chip (:func:`orchestration_for_any_chip`), which includes the same
    headers as each chip's."""
    program = source.program
    files: dict[str, bytes] = {}
    slots = kernel_slots(program, orch)
    variants: dict[str, tuple[tuple[str, str], ...]] = {}
    for slot in slots:
        kernel = slot.kernel
        path = _kernel_path(slot.core_type.value, kernel.name)
        builtin = chip_builtin_kernel(kernel)
        if builtin is not None:
            files[path] = _builtin_kernel(plan, builtin)
            variants[kernel.name] = builtin.configuration
        else:
            files[path] = _external_kernel(plan, source, kernel)
    files[_orchestration_path(orch.name)] = orchestration_for_any_chip(program, orch).encode()
    headers = _travelling_headers(files, plan.reads.headers)
    files.update(headers)
    include_dirs = (INCLUDE,) if headers else ()
    entries = [
        KernelEntry(
            slot.func_id,
            slot.kernel.name,
            slot.core_type,
            _signature(slot.kernel),
            None,
            include_dirs,
            variants.get(slot.kernel.name, ()),
        )
        for slot in slots
    ]
    entry = OrchestrationEntry(
        orch.name, _signature(orch), params=_params(orch), ranks=_sized_for(slots)
    )
    config = render_kernel_config(entry, entries, runtime=RUNTIME)
    files[_KERNEL_CONFIG] = config.encode()
    return dict(sorted(files.items()))


# The paths inside a sub-build that every sub-build names (its kernels are mostly the same few,
# its headers always): each made once, not as path objects per sub-build.
_KERNEL_CONFIG = RELATIVE_SUB_BUILD.kernel_config.as_posix()


@functools.lru_cache(maxsize=1024)
def _kernel_path(core_type: str, kernel: str) -> str:
    return RELATIVE_SUB_BUILD.kernel(core_type, kernel).as_posix()


@functools.lru_cache(maxsize=1024)
def _orchestration_path(orch: str) -> str:
    return RELATIVE_SUB_BUILD.orchestration(orch).as_posix()


@functools.lru_cache(maxsize=256)
def _header_path(name: str) -> str:
    return (RELATIVE_SUB_BUILD.include / name).as_posix()


def _travelling_headers(sources: Mapping[str, bytes], headers: HeaderFiles) -> dict[str, bytes]:
    """Our headers that ``sources`` (a sub-build's files by path) include, by their path inside
    the sub-build (``include/pypto_build/<name>``)."""
    closure = header_closure(sources.values(), headers)
    return {_header_path(name): data for name, data in closure.items()}


def _builtin_kernel(plan: _Plan, builtin: ChipBuiltinKernel) -> bytes:
    package = builtin.package
    plan.add_template_input(package.handle, KERNEL_TEMPLATE, package.template(KERNEL_TEMPLATE))
    return builtin.render().encode()


def _external_kernel(plan: _Plan, source: SourceProgram, kernel: Function) -> bytes:
    """The kernel's own source (CheckLegality made sure it names one that exists)."""
    relative = external_source(kernel)
    if relative is None:
        raise InternalError(f"kernel '{kernel.name}' has no external source")
    return plan.add_input(source.path.parent / relative)


def _signature(func: Function) -> tuple[ArgDirection, ...]:
    """Directions of ``func``'s tensor parameters in order (scalars and contexts have none)."""
    return tuple(
        ArgDirection.of(param.direction)
        for param in func.params
        if isinstance(param.var.type, TensorType)
    )


def _sized_for(slots: Sequence[KernelSlot]) -> int | None:
    """The rank count the windows of an orchestration running ``slots`` are sized for: the NR of its
    collectives, which the lowering makes the comm domain's size (the kernel takes its rank count
    from the CommContext). None when it runs no collective (nothing ties its windows to a rank
    count) or collectives of several NR (no single comm domain serves them all: only a HOST
    orchestrator can run it)."""
    ranks = {nr for slot in slots for nr in kernel_ranks(slot.kernel)}
    return ranks.pop() if len(ranks) == 1 else None


def _params(func: Function) -> tuple[OrchestrationParam, ...]:
    """Every parameter of chip orchestration ``func`` in argument order, as ``kernel_config.py``
    records it (what its signature of directions cannot say: shapes, element types, windows,
    and whose domain each CommCtx parameter is). The lowering appends one CommCtx parameter per
    DistributedTensor parameter, in their order (the kernel ABI's context slots), so the k-th
    context is the k-th window's."""
    windows = iter(
        [
            param.var.name
            for param in func.params
            if isinstance(param.var.type, DistributedTensorType)
        ]
    )
    params = []
    for param in func.params:
        name, ty = param.var.name, param.var.type
        if isinstance(ty, TensorType):
            kind: ParamKind = "window" if isinstance(ty, DistributedTensorType) else "tensor"
            dtype = RUNTIME_DTYPES[ty.dtype]
            params.append(OrchestrationParam(name, kind, param.direction.value, ty.shape, dtype))
        elif isinstance(ty, ScalarType):
            params.append(OrchestrationParam(name, "scalar", dtype=RUNTIME_DTYPES[ty.dtype]))
        elif isinstance(ty, CommCtxType) and (window := next(windows, None)) is not None:
            params.append(OrchestrationParam(name, "comm_context", window=window))
        else:
            raise InternalError(f"chip orchestration '{func.name}': parameter '{name}' of {ty}")
    return tuple(params)


def _unique(chips: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for chip in chips:
        get_chip(chip)
        if chip not in seen:
            seen.append(chip)
    if not seen:
        raise RenderError("no chip to render for")
    return seen


# --- publishing --------------------------------------------------------------------------------

_CHIP_NAMES = frozenset(chip.name for chip in CHIPS)
_DIR_MODE = 0o755


def is_render_tree(path: Path) -> bool:
    """Whether ``path`` is a directory holding only chip trees with a manifest (or nothing),
    and the logs of the build that compiled them (:data:`LOG_DIR`)."""
    if path.is_symlink() or not path.is_dir():
        return False
    try:
        return all(
            (entry.is_dir() and entry.name in _CHIP_NAMES and TreeLayout(entry).manifest.is_file())
            or (entry.name == LOG_DIR and entry.is_dir())
            for entry in path.iterdir()
        )
    except OSError:
        return False


def check_output_folder(out_dir: Path) -> None:
    """Refuse to replace a folder that is not an earlier output (RenderError)."""
    if os.path.lexists(out_dir) and not is_render_tree(out_dir):
        raise RenderError(
            f"{out_dir} exists and is not a render tree (one folder per chip, each with a "
            f"{MANIFEST}); choose another output directory or remove it"
        )


@pauses_collector
def write_trees(trees: Sequence[ChipTree], folder: Path) -> None:
    """Write ``trees`` into ``folder/<chip>`` (a staging folder that is then published).

    The staging folder is this render's own until it is published whole, so each file is
    written in place (no temporary sibling and rename, which is what makes a write atomic for
    a folder others read), each folder is made once, and the manifest describes the files from
    the bytes just written. Modes are set as :func:`fix_directory_modes` and
    :data:`~pypto_build.files.FILE_MODE` say, whatever the umask.
    """
    made = {os.fspath(folder)}
    for tree in trees:
        root = os.path.join(folder, tree.chip)
        _make_folders(root, made)  # a tree of no files still gets its folder's mode
        for path, data in tree.files.items():
            target = os.path.join(root, path)
            _make_folders(os.path.dirname(target), made)
            _write_new(target, data)
        write_manifest(
            Path(root),
            chip=tree.chip,
            toolchain=TOOLCHAIN,
            toolchain_version="",
            inputs=tree.inputs,
            contents=tree.files,
        )
    Path(folder).chmod(_DIR_MODE)
    step("rendered")


def _make_folders(directory: str, made: set[str]) -> None:
    """Create ``directory`` and its missing parents; each gets :data:`_DIR_MODE`."""
    if directory in made:
        return
    # Made first, its parents only when missing: in the staging folder most folders are new,
    # and a test of each before making it doubled the calls into the file system.
    try:
        os.mkdir(directory)
    except FileNotFoundError:
        _make_folders(os.path.dirname(directory), made)
        os.mkdir(directory)
    except FileExistsError:
        if not os.path.isdir(directory):
            raise
    os.chmod(directory, _DIR_MODE)
    made.add(directory)


def _write_new(path: str, data: bytes) -> None:
    """Write ``data`` to the file ``path`` with :data:`~pypto_build.files.FILE_MODE`."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(path, flags, FILE_MODE)
    try:
        os.fchmod(descriptor, FILE_MODE)
        # Straight to the descriptor: a buffered file object per file cost more than the
        # write itself, for the thousands of small files of a large render.
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
    finally:
        os.close(descriptor)


def fix_directory_modes(root: Path) -> None:
    """Give every directory one mode, so the tree does not depend on the umask."""
    root.chmod(_DIR_MODE)
    for directory, dirnames, _ in os.walk(root):
        for name in dirnames:
            (Path(directory) / name).chmod(_DIR_MODE)
