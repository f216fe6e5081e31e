"""Managed collectives without a builtin package: ``pld.tensor.allreduce`` and the like.

They only parse, so that the passes can reject them with their own diagnostics (or a builtin
package can implement one and take its place, ``ops/registry.py``); their result is the type of
their ``target`` operand. The collectives backed by a package are typed by the package's
contract (:mod:`pypto_build.lowering.contracts`).
"""

from __future__ import annotations

from pypto_build.lowering.ir import Type
from pypto_build.lowering.ir.names import Op
from pypto_build.lowering.ops.signature import Effects, Kind, OpDef, Operand, Operands, optional


def _target_type(ops: Operands) -> Type:
    return ops.expr("target").type


#: Collectives that only parse (a later pass rejects them), with their optional keywords.
_PARSE_ONLY: dict[Op, tuple[str, ...]] = {
    Op.ALLREDUCE: ("op",),
    Op.ALLGATHER: (),
    Op.REDUCE_SCATTER: ("op",),
    Op.BROADCAST: ("root",),
    Op.ALL_TO_ALL: (),
}

#: The collectives that only parse, as ops; a builtin package may implement any of them.
PARSE_ONLY_OPS: tuple[OpDef, ...] = tuple(
    OpDef(
        name,
        (
            Operand("input"),
            Operand("target"),
            Operand("signal"),
            *(optional(key, Kind.ANY, keyword_only=True) for key in keywords),
        ),
        _target_type,
        Effects(view_of=1, writes=(1, 2)),
    )
    for name, keywords in _PARSE_ONLY.items()
)
