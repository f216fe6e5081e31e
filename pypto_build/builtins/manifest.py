"""Builtin package manifests: a folder's ``builtin.toml`` parsed into a :class:`BuiltinPackage`.

A builtin template package is data — a manifest and Jinja2 templates — and the single source of
truth for its op (``docs/builtin-packages.md``): the lowering reads it to deduce the public op's
types, synthesize the builtin kernel, check chips and rails and derive directions and CommCtx slots,
and every chip sub-build renders its templates. The manifest declares the public DSL op and the HOST
rail's internal op, the kernel operands in argument order (role, direction, window or not, which a
peer reaches remotely, dtype rule, accepted shapes), the payload dtypes with the template variables
each contributes, the chips, rails and core type, the launch-width rule by name, the kernel ABI, and
the variables each template may reference. Parsing is strict (an unknown key, a wrong type or a
template file that no entry declares is an error naming the file and the key), because a manifest
typo would otherwise surface much later as a wrong render or as a kernel reading the wrong argument
slot.
"""

from __future__ import annotations

import enum
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast, get_args

from pypto_build.errors import PyptoUsageError
from pypto_build.files import read_regular

MANIFEST_NAME = "builtin.toml"
TEMPLATES_DIR = "templates"
TEMPLATE_SUFFIX = ".in"
#: The largest manifest and template read: ours are a few kilobytes. A package's files are
#: read as regular files that are not links: a link would put whatever it names (another
#: package's file, ``/etc/passwd``) into a rendered kernel and its record.
MAX_MANIFEST = 1 << 20
MAX_TEMPLATE = 1 << 20

#: The templates the rails render: the kernel (the CHIP and HOST rails), and on the HOST rail the
#: chip callable that launches it (its orchestration) with that callable's ``kernel_config.py``.
KERNEL_TEMPLATE = "kernel.cpp.in"
ENTRY_TEMPLATE = "entry.cpp.in"
CONFIG_TEMPLATE = "kernel_config.py.in"

#: The operand ``dtype`` that stands for the variant's payload element type.
PAYLOAD_DTYPE = "payload"
#: An operand dtype the op's contract checks itself (a bias whose type follows the payload's
#: by a rule, a workspace of bytes).
ANY_DTYPE = "any"

#: The op contract of a package that declares none: typed from its operand table.
COLLECTIVE = "collective"

CoreType = Literal["aiv", "aic", "mix"]
#: The core type of a kernel that runs on an AIC and two AIV cores together (cube:vector 1:2).
MIX: CoreType = "mix"
#: Where a program may call the op: a HOST orchestrator (one builtin dispatch per device), a CHIP
#: orchestration (a task of its pipeline), an InCore kernel body (upstream's composite form).
Rail = Literal["host", "chip", "incore"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
_HANDLE = re.compile(r":[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


class ManifestError(PyptoUsageError, ValueError):
    """A ``builtin.toml`` is malformed; the message names the file and the offending key."""


class Direction(enum.Enum):
    """How the kernel uses a tensor operand (the IR's parameter direction)."""

    IN = "In"
    OUT = "Out"
    INOUT = "InOut"


#: One dimension of an accepted shape: a fixed extent, or a symbol shared between operands
#: (``NR``), possibly a product of symbols (``NR*MAX_RECV``).
Dim = int | str
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\*[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class Operand:
    """One tensor operand, in kernel-argument order."""

    name: str
    #: What the operand is to the collective (``source``, ``result``, ``signal``, ...).
    role: str
    direction: Direction
    #: The public op takes a window here (a ``pld.DistributedTensor``), and the synthesized
    #: kernel declares a DistributedTensor parameter, which gets a CommCtx argument.
    window: bool
    #: A peer reaches it through the CommContext windows (reads or writes it remotely), so a
    #: call site must pass a window view even where the public op would accept a local tensor.
    remote: bool
    #: ``"payload"`` for the variant's element type, else a fixed dtype name such as ``int32``.
    dtype: str
    #: The accepted shapes, any of them (none: the op's contract checks them).
    shapes: tuple[tuple[Dim, ...], ...]
    #: A call may pass None (the op then runs without it): the kernel's later arguments move
    #: down one slot, and the variant's variables tell the kernel.
    optional: bool = False


@dataclass(frozen=True)
class DtypeVariant:
    """A supported payload dtype and the template variables it contributes."""

    name: str
    variables: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class EntryAbi:
    """Arguments the HOST-rail entry (``entry.cpp.in``) receives from the host dispatch."""

    #: Scalars after the tensors, in order (e.g. ``nranks``, ``comm_context``, ``core_num``).
    scalars: tuple[str, ...]
    #: A per-rank ordering-token tensor follows the operand tensors (not forwarded to the kernel).
    ordering_token: bool


@dataclass(frozen=True)
class KernelAbi:
    """Where the kernel finds its arguments in ``args[]``."""

    #: ``args[0 .. tensor_count)`` hold tensor-descriptor pointers, one per operand.
    tensor_count: int
    #: ``args[ctx_slot]`` holds the ``CommContext`` address.
    ctx_slot: int
    entry: EntryAbi


@dataclass(frozen=True)
class TemplateSpec:
    """A template file and the only variables it may reference (and must be given)."""

    name: str
    variables: tuple[str, ...]


#: Where a package object keeps the templates it has read (beside its fields, which alone take
#: part in equality).
_TEMPLATE_BYTES = "_template_bytes"


@dataclass(frozen=True)
class BuiltinPackage:
    """A registered builtin template package: its manifest, and the folder it was read from."""

    handle: str
    root: Path
    #: The user-facing op (``pld.tensor.all_to_all_v``).
    public_op: str
    #: The internal per-device op of the HOST rail (``builtin.tensor.all_to_all_v``).
    builtin_op: str
    #: How the kernel's launch width follows from ``core_num`` (a rule the lowering names).
    launch_width: str
    #: The code contract that types the op and configures its kernel (a name the lowering
    #: knows); ``collective`` types it from the operand table below.
    contract: str
    #: What the synthesized kernels are named after (``__builtin_<stem>__<dtype>``).
    kernel_stem: str
    core_type: CoreType
    chips: tuple[str, ...]
    #: Why only these chips, for diagnostics (e.g. the transport the kernel relies on).
    chip_note: str | None
    rails: tuple[Rail, ...]
    operands: tuple[Operand, ...]
    dtypes: tuple[DtypeVariant, ...]
    abi: KernelAbi
    templates: tuple[TemplateSpec, ...]

    @property
    def package(self) -> str:
        """The handle without its leading ``:``: the ``template_package`` render variable."""
        return self.handle[1:]

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST_NAME

    def template_spec(self, name: str) -> TemplateSpec:
        """The declaration of template ``name``; a :class:`LookupError` if there is none."""
        for spec in self.templates:
            if spec.name == name:
                return spec
        known = ", ".join(spec.name for spec in self.templates)
        raise LookupError(f"builtin {self.handle} has no template {name!r}; it declares: {known}")

    def template(self, name: str) -> bytes:
        """The bytes of the declared template ``name``, read once per package object.

        A package is a snapshot of its folder, as the registry that discovered it is one of the
        environment: the manifest is read when the package is loaded, each template when first
        asked for. So every render of one build, the render's own record of the template's
        hash and the compiled templates it keeps (:mod:`.render`) agree on the same bytes.
        """
        spec = self.template_spec(name)
        read: dict[str, bytes] = self.__dict__.setdefault(_TEMPLATE_BYTES, {})
        data = read.get(spec.name)
        if data is None:
            path = self.root / TEMPLATES_DIR / spec.name
            data = read[spec.name] = read_regular(
                path, follow_symlinks=False, max_bytes=MAX_TEMPLATE
            )
        return data

    def dtype_variables(self, dtype: str) -> dict[str, str]:
        """Template variables of payload dtype ``dtype``; a :class:`LookupError` if unsupported."""
        for variant in self.dtypes:
            if variant.name == dtype:
                return dict(variant.variables)
        known = ", ".join(variant.name for variant in self.dtypes)
        raise LookupError(
            f"builtin {self.handle} does not support dtype {dtype!r}; it has: {known}"
        )


def load_package(root: Path) -> BuiltinPackage:
    """Parse and validate ``root/builtin.toml`` against the templates found under ``root``."""
    path = root / MANIFEST_NAME
    try:
        text = read_regular(path, follow_symlinks=False, max_bytes=MAX_MANIFEST).decode("utf-8")
        data = tomllib.loads(text)
    except OSError as error:
        raise ManifestError(f"{path}: cannot read the manifest: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise ManifestError(f"{path}: not UTF-8 text (byte {error.start})") from error
    except tomllib.TOMLDecodeError as error:
        raise ManifestError(f"{path}: not valid TOML: {error}") from error
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise ManifestError(f"{path}: not valid TOML: nested too deeply") from None
    return _parse(root, _Table(path, "", data))


def _parse(root: Path, top: _Table) -> BuiltinPackage:
    handle = top.matching("handle", _HANDLE, "a ':' followed by a dotted package name")
    op = top.table("op")
    public_op = op.matching("public", _DOTTED, "a dotted op name")
    builtin_op = op.matching("builtin", _DOTTED, "a dotted op name")
    launch_width = op.matching("launch_width", _IDENTIFIER, "a launch-width rule name")
    contract = op.optional_matching("contract", _IDENTIFIER, "an op contract name") or COLLECTIVE
    kernel = op.optional_matching("kernel", _IDENTIFIER, "an identifier")
    op.finish()
    core_type = cast(CoreType, top.choice("core_type", get_args(CoreType)))
    chips = top.identifiers("chips", allow_empty=False)
    chip_note = top.optional_string("chip_note")
    rails = top.identifiers("rails", allow_empty=False)
    for rail in rails:
        if rail not in get_args(Rail):
            allowed = ", ".join(get_args(Rail))
            raise top.error("rails", f"must name rails among {allowed}, got {rail!r}")
    operands = tuple(_operand(table) for table in top.tables("operands"))
    _require_unique(top, "operands", [operand.name for operand in operands], "operand name")
    dtypes_table = top.table("dtypes")
    dtypes = _dtypes(dtypes_table)
    abi = _abi(top.table("abi"), len(operands))
    templates = _templates(root, top.table("templates"), cast(tuple[Rail, ...], rails))
    top.finish()
    _check_dtype_variables_are_declared(dtypes_table, dtypes, templates)
    return BuiltinPackage(
        handle=handle,
        root=root,
        public_op=public_op,
        builtin_op=builtin_op,
        launch_width=launch_width,
        contract=contract,
        kernel_stem=kernel or public_op.rsplit(".", 1)[-1],
        core_type=core_type,
        chips=chips,
        chip_note=chip_note,
        rails=cast(tuple[Rail, ...], rails),
        operands=operands,
        dtypes=dtypes,
        abi=abi,
        templates=templates,
    )


def _operand(table: _Table) -> Operand:
    direction = table.choice("direction", tuple(d.value for d in Direction))
    dtype = table.string("dtype")
    if dtype not in (PAYLOAD_DTYPE, ANY_DTYPE) and not _IDENTIFIER.fullmatch(dtype):
        raise table.error("dtype", f"must be {PAYLOAD_DTYPE!r} or a dtype name, got {dtype!r}")
    operand = Operand(
        name=table.matching("name", _IDENTIFIER, "an identifier"),
        role=table.matching("role", _IDENTIFIER, "an identifier"),
        direction=Direction(direction),
        window=table.boolean("window"),
        remote=table.boolean("remote"),
        dtype=dtype,
        shapes=_shapes(table) if "shapes" in table.keys_in_order() else (),
        optional=table.optional_boolean("optional"),
    )
    table.finish()
    return operand


def _shapes(table: _Table) -> tuple[tuple[Dim, ...], ...]:
    """``shapes = [["NR*MAX_RECV", "SIZE"], ...]``: each a non-empty list of positive extents
    and symbols."""
    value = table.value("shapes")
    if not isinstance(value, list) or not value:
        raise table.error("shapes", "must be a non-empty array of shapes")
    shapes = []
    for shape in value:
        if not isinstance(shape, list) or not shape:
            raise table.error("shapes", f"each shape must be a non-empty array, got {shape!r}")
        for dim in shape:
            is_extent = isinstance(dim, int) and not isinstance(dim, bool) and dim > 0
            if not is_extent and not (isinstance(dim, str) and _SYMBOL.fullmatch(dim)):
                raise table.error(
                    "shapes",
                    f"a dimension is a positive integer or a symbol such as 'NR' or "
                    f"'NR*MAX_RECV', got {dim!r}",
                )
        shapes.append(tuple(cast(list[Dim], shape)))
    return tuple(shapes)


def _dtypes(table: _Table) -> tuple[DtypeVariant, ...]:
    variants = []
    for name, variables in table.subtables():
        if not _IDENTIFIER.fullmatch(name):
            raise table.error(name, "a dtype name must be an identifier")
        values = tuple((key, variables.string(key)) for key in variables.keys_in_order())
        for key, _ in values:
            if not _IDENTIFIER.fullmatch(key):
                raise variables.error(key, "a template variable name must be an identifier")
        variables.finish()
        variants.append(DtypeVariant(name, values))
    if not variants:
        raise table.error(None, "must declare at least one dtype")
    first = variants[0]
    for variant in variants[1:]:
        if {key for key, _ in variant.variables} != {key for key, _ in first.variables}:
            raise table.error(
                variant.name,
                f"must set the same template variables as {first.name!r} "
                f"({', '.join(sorted(key for key, _ in first.variables))})",
            )
    table.finish()
    return tuple(variants)


def _abi(table: _Table, operand_count: int) -> KernelAbi:
    tensor_count = table.integer("tensor_count", minimum=1)
    if tensor_count != operand_count:
        raise table.error(
            "tensor_count",
            f"must equal the number of operands ({operand_count}), got {tensor_count}",
        )
    ctx_slot = table.integer("ctx_slot", minimum=tensor_count)
    entry = table.table("entry")
    entry_abi = EntryAbi(
        scalars=entry.identifiers("scalars", allow_empty=True),
        ordering_token=entry.boolean("ordering_token"),
    )
    entry.finish()
    table.finish()
    return KernelAbi(tensor_count=tensor_count, ctx_slot=ctx_slot, entry=entry_abi)


def _templates(root: Path, table: _Table, rails: tuple[Rail, ...]) -> tuple[TemplateSpec, ...]:
    specs = []
    for name, spec in table.subtables():
        if "/" in name or "\\" in name or not name.endswith(TEMPLATE_SUFFIX):
            raise table.error(name, f"a template is a file name ending in {TEMPLATE_SUFFIX!r}")
        if not (root / TEMPLATES_DIR / name).is_file():
            raise table.error(
                name, f"declares a template that {TEMPLATES_DIR}/{name} does not hold"
            )
        specs.append(TemplateSpec(name, spec.identifiers("variables", allow_empty=True)))
        spec.finish()
    table.finish()
    declared = {spec.name for spec in specs}
    templates_dir = root / TEMPLATES_DIR
    on_disk = sorted(p.name for p in templates_dir.glob(f"*{TEMPLATE_SUFFIX}") if p.is_file())
    for name in on_disk:
        if name not in declared:
            raise table.error(None, f"{TEMPLATES_DIR}/{name} is not declared")
    if not specs:
        raise table.error(None, "must declare at least one template")
    _require_rendered_templates(table, rails, declared)
    return tuple(sorted(specs, key=lambda spec: spec.name))


def _require_rendered_templates(table: _Table, rails: tuple[Rail, ...], declared: set[str]) -> None:
    """Every template a rail of the package renders is declared: a missing one would surface
    only at compile time, as a sub-build without the source it names."""
    required: dict[str, str] = {}
    if "chip" in rails or "host" in rails:
        required[KERNEL_TEMPLATE] = "the CHIP and HOST rails render the kernel from it"
    if "host" in rails:
        required[ENTRY_TEMPLATE] = (
            "the HOST rail renders the chip callable that launches the kernel from it"
        )
        required[CONFIG_TEMPLATE] = "the HOST rail renders that callable's kernel_config.py from it"
    for name, reason in required.items():
        if name not in declared:
            raise table.error(name, f"is required: {reason}")


def _check_dtype_variables_are_declared(
    table: _Table, dtypes: tuple[DtypeVariant, ...], templates: tuple[TemplateSpec, ...]
) -> None:
    """A dtype variable that no template declares could never be rendered: a manifest slip."""
    declared = {variable for spec in templates for variable in spec.variables}
    for key, _ in dtypes[0].variables:
        if key not in declared:
            raise table.error(dtypes[0].name, f"sets {key!r}, which no template declares")


def _require_unique(table: _Table, key: str, values: list[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise table.error(key, f"repeats the {what} {value!r}")
        seen.add(value)


def _key_text(key: str) -> str:
    return key if _IDENTIFIER.fullmatch(key) else f'"{key}"'


class _Table:
    """A TOML table being read; it knows its file and key path for error messages and flags
    keys that nothing read (almost always a misspelling)."""

    def __init__(self, path: Path, prefix: str, data: Mapping[str, object]) -> None:
        self._path = path
        self._prefix = prefix
        self._data = data
        self._read: set[str] = set()

    def error(self, key: str | None, message: str) -> ManifestError:
        where = self._prefix if key is None else self._child(key)
        return ManifestError(f"{self._path}: {where or '<top level>'}: {message}")

    def keys_in_order(self) -> list[str]:
        return list(self._data)

    def finish(self) -> None:
        unknown = [key for key in self._data if key not in self._read]
        if unknown:
            raise self.error(unknown[0], "unknown key")

    def _child(self, key: str) -> str:
        text = _key_text(key)
        return f"{self._prefix}.{text}" if self._prefix else text

    def _get(self, key: str) -> object:
        if key not in self._data:
            raise self.error(key, "is required")
        self._read.add(key)
        return self._data[key]

    def value(self, key: str) -> object:
        """The raw value of required key ``key``."""
        return self._get(key)

    def optional_string(self, key: str) -> str | None:
        return self.string(key) if key in self._data else None

    def optional_matching(self, key: str, pattern: re.Pattern[str], what: str) -> str | None:
        return self.matching(key, pattern, what) if key in self._data else None

    def optional_boolean(self, key: str) -> bool:
        """Boolean ``key``, false when absent."""
        return self.boolean(key) if key in self._data else False

    def string(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {_toml_type(value)}")
        return value

    def matching(self, key: str, pattern: re.Pattern[str], what: str) -> str:
        value = self.string(key)
        if not pattern.fullmatch(value):
            raise self.error(key, f"must be {what}, got {value!r}")
        return value

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self.string(key)
        if value not in allowed:
            raise self.error(key, f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    def boolean(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise self.error(key, f"must be a boolean, got {_toml_type(value)}")
        return value

    def integer(self, key: str, minimum: int) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"must be an integer, got {_toml_type(value)}")
        if value < minimum:
            raise self.error(key, f"must be at least {minimum}, got {value}")
        return value

    def identifiers(self, key: str, allow_empty: bool) -> tuple[str, ...]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(key, f"must be an array of strings, got {_toml_type(value)}")
        items = cast(list[str], value)
        if not items and not allow_empty:
            raise self.error(key, "must not be empty")
        for item in items:
            if not _IDENTIFIER.fullmatch(item):
                raise self.error(key, f"must hold identifiers, got {item!r}")
        _require_unique(self, key, items, "entry")
        return tuple(items)

    def table(self, key: str) -> _Table:
        value = self._get(key)
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table, got {_toml_type(value)}")
        return _Table(self._path, self._child(key), value)

    def tables(self, key: str) -> tuple[_Table, ...]:
        value = self._get(key)
        if not isinstance(value, list) or not value:
            raise self.error(key, "must be a non-empty array of tables")
        tables = []
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.error(key, f"item {index} must be a table, got {_toml_type(item)}")
            tables.append(_Table(self._path, f"{self._child(key)}[{index}]", item))
        return tuple(tables)

    def subtables(self) -> Iterator[tuple[str, _Table]]:
        """Every key of this table, each holding a table (``[dtypes.fp32]``-style entries)."""
        for key in self.keys_in_order():
            yield key, self.table(key)


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"
