"""The op table: every op of the program model by IR name, and its DSL spellings.

The DSL spelling of an op is ``"pl." + name`` for ``tensor.*`` ops and the name itself for
``pld.*`` ops; some ops also have short spellings (``pl.create_tensor``). The front end resolves
a file's import aliases to the canonical ``pl.`` / ``pld.`` prefixes before asking here.

The managed collectives come from the registered builtin packages (``docs/builtin-packages.md``),
each defined by its :class:`~pypto_build.lowering.builtin_ops.BuiltinOp` (typed by the contract
its manifest names): each package's public op
(``pld.tensor.all_to_all_v``) is a DSL op, and its internal op (``builtin.tensor.all_to_all_v``,
where the contract has a HOST rail) is created only by the HOST rail: it is looked up like any op,
but no DSL name resolves to it and it prints under its IR name. A collective without a package only
parses, so a pass can reject it by name; a package that implements it takes its place. The table is
built on first use, so importing the program model does not load every package.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pypto_build.builtins.registry import BuiltinRegistryError
from pypto_build.lowering.builtin_registry import builtin_ops
from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ops.distributed_ops import DISTRIBUTED_OPS
from pypto_build.lowering.ops.parse_only import PARSE_ONLY_OPS
from pypto_build.lowering.ops.signature import OpDef
from pypto_build.lowering.ops.tensor_ops import TENSOR_OPS


@dataclass(frozen=True)
class _Table:
    #: Ops a program may call, by IR name.
    ops: dict[str, OpDef]
    #: Ops only passes create; a program cannot call them.
    internal: dict[str, OpDef]
    #: The ``pld.tensor.*`` managed collectives (lowered by the collective passes, or rejected).
    collectives: frozenset[str]
    #: DSL spelling -> IR name.
    by_dsl_name: dict[str, str]
    #: The managed collectives no loaded package implements (they only parse).
    unimplemented: frozenset[str]


@functools.cache
def _table() -> _Table:
    packaged = {builtin.op: builtin.public_def for builtin in builtin_ops()}
    parse_only = {op.name: op for op in PARSE_ONLY_OPS if op.name not in packaged}
    static = {op.name: op for op in (*TENSOR_OPS, *DISTRIBUTED_OPS)}
    for name in packaged:
        if name in static:
            found = next(b for b in builtin_ops() if b.op == name)
            raise BuiltinRegistryError(
                f"{found.package.manifest_path}: op.public: {name} is an op of the program "
                "model itself; a builtin package may only add a collective"
            )
    ops = {**static, **parse_only, **packaged}
    internal = {
        builtin.builtin_op: opdef
        for builtin in builtin_ops()
        if (opdef := builtin.internal_def) is not None
    }
    by_dsl_name = {
        spelling: op.name
        for op in ops.values()
        for spelling in (_spelling(op.name, internal), *op.spellings)
    }
    collectives = frozenset({*parse_only, *packaged})
    return _Table(ops, internal, collectives, by_dsl_name, frozenset(parse_only))


def _spelling(op: str, internal: dict[str, OpDef]) -> str:
    return op if op.startswith("pld.") or op in internal else "pl." + op


def program_ops() -> tuple[str, ...]:
    """Every op a program may call, by IR name (internal ops excluded)."""
    return tuple(_table().ops)


def lookup(op: str) -> OpDef:
    """The definition of a registered op; an unknown name is a bug in the caller."""
    table = _table()
    opdef = table.ops.get(op) or table.internal.get(op)
    if opdef is None:
        raise InternalError(f"unknown op '{op}'")
    return opdef


def dsl_spelling(op: str) -> str:
    """How the DSL writes op ``op``: ``tensor.create`` -> ``pl.tensor.create``. An internal op
    has no DSL spelling; it is written under its IR name, which the front end rejects."""
    return _spelling(lookup(op).name, _table().internal)


def resolve_dsl_name(path: str) -> str | None:
    """The IR op a canonical DSL dotted path names, or None if it is not an op."""
    return _table().by_dsl_name.get(path)


def is_unimplemented_collective(op: str) -> bool:
    """Whether ``op`` is a ``pld.tensor.*`` collective that no loaded package implements."""
    return op in _table().unimplemented


def is_managed_collective(op: str) -> bool:
    """Whether ``op`` is a ``pld.tensor.*`` collective a program may call."""
    return op in _table().collectives
