"""Writer and reader of a sub-build's ``kernel_config.py``.

PyPTO's runtime loads a chip sub-build through this file, so the writer reproduces upstream's
format byte for byte (``_generate_config_file`` of hw-native-sys/pypto at e2d0f78,
``python/pypto/backend/pto_backend.py``): the header with the ``ArgDirection`` import only
when some signature is present, ``RUNTIME_CONFIG``,
``ORCHESTRATION`` and ``KERNELS`` sorted by ``func_id``, tabs, and the blank lines that upstream's
line joining produces. Signatures list tensor arguments only; scalars are never emitted (the
direction type has no scalar member). Our additions, keys PyPTO's loader does not read: a
kernel's compiled ``binary``, the last key of its entry and present only when known, so a config
without binaries stays identical to upstream's; a builtin kernel's ``variant``, the static
configuration it was rendered for beyond its dtype (the template variables of an op whose
contract configures the kernel, such as the MC2 tiling), present only for a kernel that has one,
so what a variant is built for can be read off the tree; and the orchestration's ``params``
(:class:`OrchestrationParam`), every parameter in argument order with its shape, element type
and whether it is a window, which a signature of directions cannot say and a run of the
orchestration without a HOST orchestrator needs (``pypto-build run --program``) to allocate its
windows and check its inputs; and the orchestration's ``ranks``, the rank count its collectives'
windows were sized for (their signal's rows, NR), present only when it runs a collective, so
such a run on another rank count is refused before anything runs.

Every kernel, including a hand-written external one, is listed by its path inside the sub-build
(``kernels/<core type>/<name>.cpp``), never by an absolute path: external sources are copied in.

Our own tools read the file back with :func:`read_kernel_config`, which interprets the syntax
tree and never imports or executes the file.
"""

from __future__ import annotations

import ast
import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.distributed_meta import (
    DTYPE_NAMES,
    Parameter,
    ParameterDirection,
    ParameterKind,
    dtype_of_name,
)
from pypto_build.chip_build.runtime_types import DataType
from pypto_build.errors import PyptoUsageError
from pypto_build.files import read_text
from pypto_build.lowering.ir import ParamDirection
from pypto_build.lowering.runtime_facts import COMM_MAX_RANK_NUM

#: Entry point every AICPU orchestration exports (upstream's fixed name).
ORCHESTRATION_FUNCTION = "aicpu_orchestration_entry"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIGNATURE_IMPORT = "from simpler.task_interface import ArgDirection as _D"


class Runtime(enum.StrEnum):
    """The runtimes a sub-build can target; the value is upstream's wire name. Upstream has
    others (``host_build_graph``); the orchestrations we generate are written for this one."""

    TENSORMAP_AND_RINGBUFFER = "tensormap_and_ringbuffer"

    @classmethod
    def from_name(cls, name: str) -> Runtime:
        """The runtime whose wire name is ``name``; anything else is upstream's error."""
        for runtime in cls:
            if runtime.value == name:
                return runtime
        valid = ", ".join(runtime.value for runtime in cls)
        raise ValueError(f"Unknown runtime '{name}' (expected one of: {valid})")


class ArgDirection(enum.StrEnum):
    """Direction of one tensor argument, spelled as simpler's ``ArgDirection`` members."""

    IN = "IN"
    OUT = "OUT"
    INOUT = "INOUT"

    @classmethod
    def of(cls, direction: ParamDirection) -> ArgDirection:
        """The wire spelling of an IR parameter direction."""
        return cls[direction.name.upper()]


class KernelConfigError(PyptoUsageError, ValueError):
    """A kernel_config.py that this module did not write, or an entry it cannot represent."""


def _check_identifier(value: str, what: str) -> None:
    # Names become file names and unescaped string literals, so only C identifiers are safe.
    if not _IDENTIFIER.fullmatch(value):
        raise KernelConfigError(f"{what} '{value}' is not a C identifier")


def _check_binary(binary: str, source: str, what: str) -> None:
    """A binary sits at its source's place, beside it (``kernels/aiv/k.o``) or under one
    folder of the sub-build (``sim/kernels/aiv/k.so``), with another extension."""
    stem = source.removesuffix(".cpp") + "."
    placed = binary.split("/", 1)[1] if binary.count("/") > stem.count("/") else binary
    extension = placed.removeprefix(stem)
    if extension == placed or not extension or "/" in extension or extension == "cpp":
        raise KernelConfigError(
            f"binary '{binary}' of {what} must sit at its source's place, as '{stem}<ext>' "
            f"or '<folder>/{stem}<ext>'"
        )


def _directions(signature: Sequence[str]) -> tuple[ArgDirection, ...]:
    # Accepts the upstream spellings ("IN", "OUT", "INOUT"); a scalar has no direction to list.
    return tuple(ArgDirection(direction) for direction in signature)


#: What an orchestration parameter is: a tensor in device memory, a tensor in a comm domain's
#: window (a ``DistributedTensor``), a scalar, or the ``CommContext`` of a window parameter's
#: domain (MaterializeDistTensorCtx appends one per window parameter).
ParamKind = Literal["tensor", "window", "scalar", "comm_context"]
_PARAM_KINDS: tuple[ParamKind, ...] = ("tensor", "window", "scalar", "comm_context")


@dataclass(frozen=True)
class OrchestrationParam:
    """One parameter of a chip orchestration, in argument order: tensors (and windows) are its
    ``orch_args.tensor(i)`` in turn, scalars and contexts its ``orch_args.scalar(j)``.

    Shapes and element types are the program's, spelled as ``distributed_meta.json`` spells a
    HOST orchestrator's; a scalar has shape ``()`` and direction In, a context only the window
    parameter whose domain it belongs to.
    """

    name: str
    kind: ParamKind
    direction: ParameterDirection = "In"
    shape: tuple[int, ...] = ()
    dtype: DataType | None = None
    #: A ``comm_context``'s window parameter.
    window: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        _check_identifier(self.name, "parameter name")
        if self.kind not in _PARAM_KINDS:
            raise KernelConfigError(f"parameter {self.name}: unknown kind {self.kind!r}")
        if self.direction not in ("In", "Out", "InOut"):
            raise KernelConfigError(f"parameter {self.name}: unknown direction {self.direction!r}")
        tensor = self.kind in ("tensor", "window")
        if (self.dtype is None) != (self.kind == "comm_context"):
            raise KernelConfigError(f"parameter {self.name}: a {self.kind} has an element type")
        if (self.window is None) != (self.kind != "comm_context"):
            raise KernelConfigError(f"parameter {self.name}: only a context names a window")
        if not tensor and (self.shape or self.direction != "In"):
            raise KernelConfigError(f"parameter {self.name}: a {self.kind} has shape () and is In")

    @property
    def is_tensor(self) -> bool:
        """A tensor argument (a window included)."""
        return self.kind in ("tensor", "window")

    def parameter(self) -> Parameter:
        """This tensor or scalar as a run binds its input (a window as a tensor)."""
        if self.dtype is None:
            raise KernelConfigError(f"parameter {self.name}: a context takes no input")
        kind: ParameterKind = "tensor" if self.is_tensor else "scalar"
        return Parameter(self.name, kind, self.shape, self.dtype, self.direction)


@dataclass(frozen=True)
class OrchestrationEntry:
    """The AICPU orchestration of a sub-build, compiled from ``orchestration/<name>.cpp``."""

    name: str
    #: Directions of the orchestration's tensor arguments, in ``orch_args.tensor(i)`` order.
    signature: tuple[ArgDirection, ...] = ()
    function_name: str = ORCHESTRATION_FUNCTION
    #: The compiled orchestration relative to the sub-build root; None until built.
    binary: str | None = None
    #: Every parameter, in argument order; empty for an orchestration that does not describe
    #: them (a HOST-rail variant's, rendered from its package's template).
    params: tuple[OrchestrationParam, ...] = ()
    #: The rank count its collectives' windows were sized for (NR); None when it runs none.
    ranks: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "signature", _directions(self.signature))
        object.__setattr__(self, "params", tuple(self.params))
        _check_identifier(self.name, "orchestration name")
        _check_identifier(self.function_name, "orchestration function name")
        _check_params(self.params, self.signature)
        if self.binary is not None:
            _check_binary(self.binary, self.source, f"orchestration '{self.name}'")
        if self.ranks is not None and not 1 <= self.ranks <= COMM_MAX_RANK_NUM:
            raise KernelConfigError(
                f"ranks {self.ranks} is not a rank count (1 to {COMM_MAX_RANK_NUM})"
            )

    @property
    def source(self) -> str:
        """The source path relative to the sub-build root."""
        return f"orchestration/{self.name}.cpp"


def _check_params(params: Sequence[OrchestrationParam], signature: Sequence[ArgDirection]) -> None:
    """Parameters agree with the signature (one tensor per entry, same directions), and every
    context names a window parameter."""
    if not params:
        return
    names = [param.name for param in params]
    if len(set(names)) != len(names):
        raise KernelConfigError("an orchestration parameter is named twice")
    tensors = [param for param in params if param.is_tensor]
    directions = [ArgDirection(param.direction.upper()) for param in tensors]
    if directions != list(signature):
        raise KernelConfigError(
            f"the tensor parameters ({', '.join(d.value for d in directions)}) do not match "
            f"the signature ({', '.join(d.value for d in signature)})"
        )
    windows = {param.name for param in params if param.kind == "window"}
    for param in params:
        if param.window is not None and param.window not in windows:
            raise KernelConfigError(
                f"context {param.name} names '{param.window}', which is no window parameter"
            )


@dataclass(frozen=True)
class KernelEntry:
    """One kernel of a sub-build, compiled from ``kernels/<core_type>/<name>.cpp``."""

    func_id: int
    name: str
    core_type: CoreType
    #: Directions of the kernel's tensor arguments, tensors first, in parameter order.
    signature: tuple[ArgDirection, ...] = ()
    #: The compiled kernel relative to the sub-build root, at its source's place beside it or
    #: in a toolchain's binary folder (``sim/kernels/<core_type>/<name>.so``); None until built.
    binary: str | None = None
    #: Include directories relative to the sub-build root (``extra_include_dirs``, which
    #: PyPTO's runtime passes to the kernel's compile): the headers that travel with the tree.
    include_dirs: tuple[str, ...] = ()
    #: A builtin kernel's configuration beyond its dtype, ``(variable, value)`` in template
    #: order: what its variant was rendered for (the mc2 contract's tiling). Empty for every
    #: other kernel, which then has no ``variant`` key.
    variant: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "core_type", CoreType(self.core_type))
        object.__setattr__(self, "signature", _directions(self.signature))
        object.__setattr__(self, "include_dirs", tuple(self.include_dirs))
        object.__setattr__(self, "variant", tuple((k, v) for k, v in self.variant))
        names = [name for name, _ in self.variant]
        for name, value in self.variant:
            _check_identifier(name, f"variant variable of kernel '{self.name}'")
            if not isinstance(value, str):
                raise KernelConfigError(
                    f"kernel '{self.name}': variant variable {name} must be a string"
                )
        if len(set(names)) != len(names):
            raise KernelConfigError(f"kernel '{self.name}': a variant variable is named twice")
        if self.func_id < 0:
            raise KernelConfigError(f"kernel '{self.name}' has negative func_id {self.func_id}")
        _check_identifier(self.name, "kernel name")
        if self.binary is not None:
            _check_binary(self.binary, self.source, f"kernel '{self.name}'")

    @property
    def source(self) -> str:
        """The source path relative to the sub-build root."""
        return f"kernels/{self.core_type.value}/{self.name}.cpp"


@dataclass(frozen=True)
class KernelConfig:
    """The content of one ``kernel_config.py``; kernels are kept sorted by ``func_id``."""

    orchestration: OrchestrationEntry | None
    kernels: tuple[KernelEntry, ...] = ()
    runtime: Runtime = Runtime.TENSORMAP_AND_RINGBUFFER
    enable_sdma: bool = False

    def __post_init__(self) -> None:
        by_id: dict[int, KernelEntry] = {}
        sources: set[str] = set()
        for kernel in self.kernels:
            if kernel.func_id in by_id:
                raise KernelConfigError(
                    f"kernels '{by_id[kernel.func_id].name}' and '{kernel.name}' share "
                    f"func_id {kernel.func_id}"
                )
            # A MIX kernel is listed once per core type, from one source in each core's folder.
            if kernel.source in sources:
                raise KernelConfigError(f"kernel {kernel.source} is listed twice")
            by_id[kernel.func_id] = kernel
            sources.add(kernel.source)
        object.__setattr__(self, "kernels", tuple(by_id[i] for i in sorted(by_id)))
        object.__setattr__(self, "runtime", Runtime.from_name(self.runtime))

    def with_binaries(
        self, binaries: Mapping[str, str], orchestration: str | None = None
    ) -> KernelConfig:
        """This config with ``binaries[source]`` recorded as the binary of the kernel compiled
        from ``source`` (relative to the sub-build root), and ``orchestration`` (if given) as
        the orchestration's."""
        unknown = sorted(set(binaries) - {kernel.source for kernel in self.kernels})
        if unknown:
            raise KernelConfigError(f"binaries given for unknown kernels: {', '.join(unknown)}")
        kernels = tuple(
            replace(kernel, binary=binaries.get(kernel.source, kernel.binary))
            for kernel in self.kernels
        )
        entry = self.orchestration
        if orchestration is not None:
            if entry is None:
                raise KernelConfigError("an orchestration binary given for a config without one")
            entry = replace(entry, binary=orchestration)
        return replace(self, kernels=kernels, orchestration=entry)

    def render(self) -> str:
        """The ``kernel_config.py`` text for this config."""
        return _render(self)


def render_kernel_config(
    orchestration: OrchestrationEntry | None,
    kernels: Sequence[KernelEntry],
    runtime: str = "tensormap_and_ringbuffer",
    enable_sdma: bool = False,
) -> str:
    """The ``kernel_config.py`` text for a sub-build (upstream format plus kernel binaries).

    ``orchestration`` is None for a sub-build without an orchestration of its own; the
    ``ORCHESTRATION`` block is then omitted. ``runtime`` is a wire name (:class:`Runtime`).
    """
    config = KernelConfig(
        orchestration=orchestration,
        kernels=tuple(kernels),
        runtime=Runtime.from_name(runtime),
        enable_sdma=enable_sdma,
    )
    return _render(config)


def _signature_text(signature: tuple[ArgDirection, ...]) -> str:
    return "[" + ", ".join(f"_D.{direction.value}" for direction in signature) + "]"


def _root_path_text(relative: str) -> str:
    parts = " / ".join(f'"{part}"' for part in PurePosixPath(relative).parts)
    return f"str(_ROOT_DIR / {parts})"


def _kernel_line(kernel: KernelEntry) -> str:
    text = (
        f'\t{{"func_id": {kernel.func_id}, "name": "{kernel.name}", '
        f'"source": {_root_path_text(kernel.source)}, "core_type": "{kernel.core_type.value}"'
    )
    if kernel.include_dirs:
        dirs = ", ".join(_root_path_text(path) for path in kernel.include_dirs)
        text += f', "extra_include_dirs": [{dirs}]'
    if kernel.signature:
        text += f', "signature": {_signature_text(kernel.signature)}'
    if kernel.variant:
        # One variable a line: a variant (an MC2 tiling) has dozens. Values are strings as the
        # template saw them; JSON's string syntax is Python's for them.
        lines = "".join(f"\t\t{json.dumps(k)}: {json.dumps(v)},\n" for k, v in kernel.variant)
        text += ', "variant": {\n' + lines + "\t}"
    if kernel.binary is not None:
        text += f', "binary": {_root_path_text(kernel.binary)}'
    return text + "},"


def _param_text(param: OrchestrationParam) -> str:
    """One parameter as a dict literal, keys in a fixed order and only those of its kind."""
    fields: list[tuple[str, object]] = [("name", param.name), ("kind", param.kind)]
    if param.is_tensor:
        fields += [("direction", param.direction), ("shape", list(param.shape))]
    if param.dtype is not None:
        fields.append(("dtype", DTYPE_NAMES[param.dtype]))
    if param.window is not None:
        fields.append(("window", param.window))
    return "{" + ", ".join(f'"{key}": {_literal(value)}' for key, value in fields) + "}"


def _literal(value: object) -> str:
    # Names are C identifiers and kinds, directions and element types plain words, so a
    # double-quoted string needs no escapes.
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _render(config: KernelConfig) -> str:
    orchestration = config.orchestration
    has_signatures = any(kernel.signature for kernel in config.kernels) or bool(
        orchestration is not None and orchestration.signature
    )
    # Upstream joins these items with "\n" and adds a final "\n"; an item that already ends in
    # "\n" therefore leaves a blank line after it.
    items = ["# Kernel and Orchestration Configuration\n", "from pathlib import Path\n"]
    if has_signatures:
        items.append(_SIGNATURE_IMPORT + "\n")
    items.append("_ROOT_DIR = Path(__file__).parent\n")
    items += [
        f"# Runtime configuration for {config.runtime.value}.",
        "# AICPU thread count 0 selects the runtime's architecture default (a2a3: 4; a5: 5).",
        "RUNTIME_CONFIG = {",
        f'\t"runtime": "{config.runtime.value}",',
        '\t"aicpu_thread_num": 0,',
    ]
    if config.enable_sdma:
        items.append('\t"enable_sdma": True,')
    items.append("}\n")
    if orchestration is not None:
        items += [
            "ORCHESTRATION = {",
            f'\t"source": {_root_path_text(orchestration.source)},',
            f'\t"function_name": "{orchestration.function_name}",',
        ]
        if orchestration.signature:
            items.append(f'\t"signature": {_signature_text(orchestration.signature)},')
        if orchestration.params:
            items.append('\t"params": [')
            items += [f"\t\t{_param_text(param)}," for param in orchestration.params]
            items.append("\t],")
        if orchestration.ranks is not None:
            items.append(f'\t"ranks": {orchestration.ranks},')
        if orchestration.binary is not None:
            items.append(f'\t"binary": {_root_path_text(orchestration.binary)},')
        items.append("}\n")
    items.append("KERNELS = [")
    items += [_kernel_line(kernel) for kernel in config.kernels]
    items.append("]")
    return "\n".join(items) + "\n"


# --- reading -------------------------------------------------------------------------------------


def read_kernel_config(path_or_text: Path | str) -> KernelConfig:
    """Read a ``kernel_config.py`` written by this module, without importing it.

    A :class:`~pathlib.Path` is read from disk; a ``str`` is the file's text. Anything outside
    the format this module writes (other statements' values, unknown keys, computed
    expressions) is a :class:`KernelConfigError` naming the line, never silently dropped.
    """
    if isinstance(path_or_text, Path):
        filename = str(path_or_text)
        text = read_text(path_or_text)
    else:
        filename = "kernel_config.py"
        text = path_or_text
    config = _read_rendered(text)
    return _Reader(filename).read(text) if config is None else config


#: The ``KERNELS`` block as :func:`_render` writes it, one kernel a line.
_KERNELS_START = "\nKERNELS = [\n"
_KERNELS_END = "]\n"
_ROOT_PATH = r'str\(_ROOT_DIR((?: / "[^"\\]*")+)\)'
#: A kernel line as :func:`_kernel_line` writes it without a variant; the source is checked
#: by the round trip, as it follows from the name and core type.
_KERNEL_LINE = re.compile(
    r'\t\{"func_id": (\d+), "name": "([^"\\]*)", "source": ' + _ROOT_PATH + ", "
    r'"core_type": "([^"\\]*)"'
    r'(?:, "extra_include_dirs": \[(str\(_ROOT_DIR[^\]]*)\])?'
    r'(?:, "signature": \[(_D\.\w+(?:, _D\.\w+)*)\])?'
    r'(?:, "binary": ' + _ROOT_PATH + r")?\},"
)
_ROOT_PATHS = re.compile(_ROOT_PATH)
_PATH_PART = re.compile(r' / "([^"\\]*)"')


def _read_rendered(text: str) -> KernelConfig | None:
    """The config of a file exactly as :func:`_render` writes it, read without parsing the
    whole file into a syntax tree; None for any other text, which :class:`_Reader` then reads
    (or names the error of).

    A sub-build of a hundred kernels has a hundred ``KERNELS`` lines, and building the syntax
    tree of them is most of the cost of reading the file, read on every build. So only the
    short part before ``KERNELS`` goes through :class:`_Reader`; each kernel line is matched
    against the one form the writer gives it. The result is trusted only when rendering it
    gives back ``text`` byte for byte: the reader and the writer are inverses, so a text the
    writer produces from a config reads back as that config, whichever way it is read.
    """
    header, found, block = text.partition(_KERNELS_START)
    if not found or not block.endswith(_KERNELS_END):
        return None
    lines = block[: -len(_KERNELS_END)].split("\n")
    try:
        kernels = tuple(_rendered_kernel(line) for line in lines[:-1])
        if lines[-1]:
            return None
        base = _Reader("kernel_config.py").read(f"{header}{_KERNELS_START}{_KERNELS_END}")
        config = KernelConfig(base.orchestration, kernels, base.runtime, base.enable_sdma)
    except (KernelConfigError, ValueError, KeyError):
        return None
    return config if _render(config) == text else None


def _rendered_kernel(line: str) -> KernelEntry:
    """One ``KERNELS`` line in :func:`_kernel_line`'s form; ValueError for any other line."""
    match = _KERNEL_LINE.fullmatch(line)
    if match is None:
        raise ValueError("not a rendered kernel line")
    func_id, name, _, core_type, include_dirs, signature, binary = match.groups()
    return KernelEntry(
        int(func_id),
        name,
        CoreType(core_type),
        tuple(ArgDirection[item.removeprefix("_D.")] for item in signature.split(", "))
        if signature
        else (),
        None if binary is None else _rendered_path(binary),
        tuple(_rendered_path(path) for path in _ROOT_PATHS.findall(include_dirs or "")),
    )


def _rendered_path(parts: str) -> str:
    """`` / "a" / "b"`` -> ``a/b``; ValueError for a component :class:`_Reader` refuses."""
    names = _PATH_PART.findall(parts)
    if any(name in ("", ".", "..") or "/" in name for name in names):
        raise ValueError("invalid path component")
    return "/".join(names)


@dataclass(frozen=True)
class _Reader:
    filename: str

    def error(self, node: ast.AST, message: str) -> KernelConfigError:
        line = getattr(node, "lineno", 1)
        return KernelConfigError(f"{self.filename}:{line}: {message}")

    def read(self, text: str) -> KernelConfig:
        try:
            module = ast.parse(text, filename=self.filename)
        except SyntaxError as exc:
            raise KernelConfigError(f"{self.filename}:{exc.lineno}: {exc.msg}") from None
        assignments: dict[str, ast.expr] = {}
        for statement in module.body:
            if not isinstance(statement, ast.Assign):
                continue
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    if target.id in assignments:
                        raise self.error(statement, f"{target.id} is assigned twice")
                    assignments[target.id] = statement.value
        runtime_node = assignments.get("RUNTIME_CONFIG")
        kernels_node = assignments.get("KERNELS")
        if runtime_node is None or kernels_node is None:
            raise self.error(module, "RUNTIME_CONFIG and KERNELS must both be assigned")
        runtime, enable_sdma = self.runtime_config(runtime_node)
        orchestration_node = assignments.get("ORCHESTRATION")
        orchestration = (
            None if orchestration_node is None else self.orchestration(orchestration_node)
        )
        if not isinstance(kernels_node, ast.List):
            raise self.error(kernels_node, "KERNELS must be a list literal")
        kernels = tuple(self.kernel(element) for element in kernels_node.elts)
        try:
            return KernelConfig(orchestration, kernels, runtime, enable_sdma)
        except KernelConfigError as exc:
            raise self.error(kernels_node, str(exc)) from None

    def runtime_config(self, node: ast.expr) -> tuple[Runtime, bool]:
        entries = self.dict_entries(
            node, "RUNTIME_CONFIG", {"runtime", "aicpu_thread_num"}, {"enable_sdma"}
        )
        try:
            runtime = Runtime.from_name(self.string(entries["runtime"], "runtime"))
        except ValueError as exc:
            raise self.error(entries["runtime"], str(exc)) from None
        threads = entries["aicpu_thread_num"]
        if not (
            isinstance(threads, ast.Constant) and type(threads.value) is int and threads.value == 0
        ):
            raise self.error(threads, "aicpu_thread_num must be 0 (the architecture default)")
        sdma = entries.get("enable_sdma")
        if sdma is not None and not (isinstance(sdma, ast.Constant) and sdma.value is True):
            raise self.error(sdma, "enable_sdma is written only as True")
        return runtime, sdma is not None

    def orchestration(self, node: ast.expr) -> OrchestrationEntry:
        entries = self.dict_entries(
            node,
            "ORCHESTRATION",
            {"source", "function_name"},
            {"signature", "binary", "params", "ranks"},
        )
        source = self.root_path(entries["source"], "orchestration source")
        path = PurePosixPath(source)
        if path.parent != PurePosixPath("orchestration") or path.suffix != ".cpp":
            raise self.error(
                entries["source"],
                f"orchestration source '{source}' is not 'orchestration/<name>.cpp'",
            )
        signature = self.signature(entries.get("signature"))
        function_name = self.string(entries["function_name"], "function_name")
        binary = self.optional_root_path(entries.get("binary"), "binary")
        params = self.params(entries.get("params"))
        ranks = self.optional_int(entries.get("ranks"), "ranks")
        try:
            return OrchestrationEntry(path.stem, signature, function_name, binary, params, ranks)
        except KernelConfigError as exc:
            raise self.error(node, str(exc)) from None

    def optional_int(self, node: ast.expr | None, what: str) -> int | None:
        if node is None:
            return None
        if not (isinstance(node, ast.Constant) and type(node.value) is int):
            raise self.error(node, f"{what} must be an integer")
        value: int = node.value
        return value

    def params(self, node: ast.expr | None) -> tuple[OrchestrationParam, ...]:
        if node is None:
            return ()
        if not isinstance(node, ast.List) or not node.elts:
            raise self.error(node, "params must be a non-empty list of parameter dicts")
        return tuple(self.param(element) for element in node.elts)

    def param(self, node: ast.expr) -> OrchestrationParam:
        entries = self.dict_entries(
            node, "a params entry", {"name", "kind"}, {"direction", "shape", "dtype", "window"}
        )
        try:
            values = {key: ast.literal_eval(value) for key, value in entries.items()}
        except ValueError:
            raise self.error(node, "a params entry holds literals only") from None
        shape = values.get("shape", [])
        if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
            raise self.error(node, f"shape {shape!r} is not a list of sizes")
        dtype = values.get("dtype")
        try:
            return OrchestrationParam(
                name=self.string(entries["name"], "a parameter name"),
                kind=values["kind"],
                direction=values.get("direction", "In"),
                shape=tuple(shape),
                dtype=None if dtype is None else dtype_of_name(dtype),
                window=values.get("window"),
            )
        except (KernelConfigError, ValueError) as exc:
            raise self.error(node, str(exc)) from None

    def kernel(self, node: ast.expr) -> KernelEntry:
        entries = self.dict_entries(
            node,
            "a KERNELS entry",
            {"func_id", "name", "source", "core_type"},
            {"signature", "binary", "extra_include_dirs", "variant"},
        )
        func_id = entries["func_id"]
        if not (isinstance(func_id, ast.Constant) and type(func_id.value) is int):
            raise self.error(func_id, "func_id must be an integer literal")
        core_type_text = self.string(entries["core_type"], "core_type")
        try:
            core_type = CoreType(core_type_text)
        except ValueError:
            raise self.error(
                entries["core_type"], f"unknown core_type '{core_type_text}'"
            ) from None
        name = self.string(entries["name"], "name")
        signature = self.signature(entries.get("signature"))
        binary = self.optional_root_path(entries.get("binary"), "binary")
        include_dirs = self.include_dirs(entries.get("extra_include_dirs"))
        variant = self.variant(entries.get("variant"))
        try:
            kernel = KernelEntry(
                func_id.value, name, core_type, signature, binary, include_dirs, variant
            )
        except KernelConfigError as exc:
            raise self.error(node, str(exc)) from None
        source = self.root_path(entries["source"], "kernel source")
        if source != kernel.source:
            raise self.error(
                entries["source"],
                f"source of kernel '{kernel.name}' is '{source}', expected '{kernel.source}'",
            )
        return kernel

    def dict_entries(
        self, node: ast.expr, what: str, required: set[str], optional: set[str]
    ) -> dict[str, ast.expr]:
        if not isinstance(node, ast.Dict):
            raise self.error(node, f"{what} must be a dict literal")
        entries: dict[str, ast.expr] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise self.error(value, f"{what} keys must be string literals")
            if key.value not in required | optional:
                raise self.error(key, f"unknown key '{key.value}' in {what}")
            if key.value in entries:
                raise self.error(key, f"duplicate key '{key.value}' in {what}")
            entries[key.value] = value
        missing = sorted(required - entries.keys())
        if missing:
            raise self.error(node, f"{what} lacks {', '.join(repr(k) for k in missing)}")
        return entries

    def string(self, node: ast.expr, what: str) -> str:
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            raise self.error(node, f"{what} must be a string literal")
        return node.value

    def root_path(self, node: ast.expr, what: str) -> str:
        """``str(_ROOT_DIR / "a" / "b")`` -> ``"a/b"``."""
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "str"
            and len(node.args) == 1
            and not node.keywords
        ):
            raise self.error(node, f"{what} must be str(_ROOT_DIR / ...)")
        parts: list[str] = []
        current = node.args[0]
        while isinstance(current, ast.BinOp) and isinstance(current.op, ast.Div):
            parts.append(self.path_part(current.right, what))
            current = current.left
        if not (isinstance(current, ast.Name) and current.id == "_ROOT_DIR") or not parts:
            raise self.error(node, f"{what} must be str(_ROOT_DIR / ...)")
        return "/".join(reversed(parts))

    def optional_root_path(self, node: ast.expr | None, what: str) -> str | None:
        return None if node is None else self.root_path(node, what)

    def variant(self, node: ast.expr | None) -> tuple[tuple[str, str], ...]:
        """``{"name": "value", ...}``, string literals only, in the file's order."""
        if node is None:
            return ()
        if not isinstance(node, ast.Dict) or not node.keys:
            raise self.error(node, "variant must be a non-empty dict literal")
        pairs = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise self.error(value, "variant must be a dict literal without ** entries")
            pairs.append(
                (self.string(key, "a variant variable"), self.string(value, "a variant value"))
            )
        return tuple(pairs)

    def include_dirs(self, node: ast.expr | None) -> tuple[str, ...]:
        if node is None:
            return ()
        if not isinstance(node, ast.List) or not node.elts:
            raise self.error(node, "extra_include_dirs must be a non-empty list")
        return tuple(self.root_path(element, "an include directory") for element in node.elts)

    def path_part(self, node: ast.expr, what: str) -> str:
        part = self.string(node, f"a component of {what}")
        if part in ("", ".", "..") or "/" in part or "\\" in part:
            raise self.error(node, f"{what} has an invalid path component '{part}'")
        return part

    def signature(self, node: ast.expr | None) -> tuple[ArgDirection, ...]:
        if node is None:
            return ()
        if not isinstance(node, ast.List) or not node.elts:
            raise self.error(node, "signature must be a non-empty list of _D.<direction>")
        directions: list[ArgDirection] = []
        for element in node.elts:
            if not (
                isinstance(element, ast.Attribute)
                and isinstance(element.value, ast.Name)
                and element.value.id == "_D"
                and element.attr in ArgDirection.__members__
            ):
                raise self.error(element, f"unsupported signature entry {ast.unparse(element)}")
            directions.append(ArgDirection[element.attr])
        return tuple(directions)
