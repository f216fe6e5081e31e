"""The op table: every op of the program model by IR name, and its DSL spellings.

The DSL spelling of an op is ``"pl." + name`` for ``tensor.*`` ops and the name itself for
``pld.*`` ops; some ops also have short aliases (``pl.create_tensor``). The front end resolves a
file's import aliases to the canonical ``pl.`` / ``pld.`` prefixes before asking here.

Internal ops (the HOST rail's ``builtin.tensor.all_to_all_v``) are created only by passes: they
are looked up like any op, but no DSL name resolves to them and they print under their IR name.
"""

from __future__ import annotations

from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ops.collectives import BUILTIN_OPS, COLLECTIVE_OPS
from pypto_build.lowering.ops.distributed_ops import DISTRIBUTED_OPS
from pypto_build.lowering.ops.signature import OpDef
from pypto_build.lowering.ops.tensor_ops import TENSOR_OPS

OPS: dict[str, OpDef] = {op.name: op for op in (*TENSOR_OPS, *DISTRIBUTED_OPS, *COLLECTIVE_OPS)}

#: Ops only passes create; a program cannot call them.
INTERNAL_OPS: dict[str, OpDef] = {op.name: op for op in BUILTIN_OPS}

#: The ``pld.tensor.*`` managed collectives (lowered by the collective passes, or rejected).
MANAGED_COLLECTIVES: frozenset[str] = frozenset(op.name for op in COLLECTIVE_OPS)


def lookup(op: str) -> OpDef:
    """The definition of a registered op; an unknown name is a bug in the caller."""
    opdef = OPS.get(op) or INTERNAL_OPS.get(op)
    if opdef is None:
        raise InternalError(f"unknown op '{op}'")
    return opdef


def dsl_spelling(op: str) -> str:
    """How the DSL writes op ``op``: ``tensor.create`` -> ``pl.tensor.create``. An internal op
    has no DSL spelling; it is written under its IR name, which the front end rejects."""
    name = lookup(op).name
    return name if name.startswith("pld.") or name in INTERNAL_OPS else "pl." + name


_BY_DSL_NAME: dict[str, str] = {
    spelling: op.name for op in OPS.values() for spelling in (dsl_spelling(op.name), *op.aliases)
}


def resolve_dsl_name(path: str) -> str | None:
    """The IR op a canonical DSL dotted path names, or None if it is not an op."""
    return _BY_DSL_NAME.get(path)


def is_managed_collective(op: str) -> bool:
    return op in MANAGED_COLLECTIVES
