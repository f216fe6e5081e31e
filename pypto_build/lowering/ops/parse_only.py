"""Managed collectives without a builtin package: ``pld.tensor.allreduce`` and the like.

They only parse, so that the passes can reject them with their own diagnostics (or a builtin
package can implement one and take its place, ``optable/table.py``); their result is the type of
the window they rebind. Each takes the operands and keywords upstream's DSL gives it
(``python/pypto/language/distributed/op/tensor_ops.py`` of hw-native-sys/pypto at e2d0f78), so
that a program written for upstream reaches the residual check, which names what this build
lowers, instead of failing on its spelling. The collectives backed by a package are typed by the
package's contract (:mod:`pypto_build.lowering.contracts`).
"""

from __future__ import annotations

from pypto_build.lowering.ir import ReduceOp, Type
from pypto_build.lowering.ir.names import Kwarg, Op
from pypto_build.lowering.ops.signature import (
    Deducer,
    Effects,
    Kind,
    OpDef,
    Operand,
    Operands,
    optional,
)


def _type_of(operand: str) -> Deducer:
    def deduce(ops: Operands) -> Type:
        return ops.expr(operand).type

    return deduce


def _reduction() -> Operand:
    return optional("op", Kind.REDUCE_OP, keyword_only=True, default=ReduceOp.Sum)


def _parse_only(name: Op, operands: tuple[Operand, ...], result: str) -> OpDef:
    """A collective that returns (and writes in place) its ``result`` window and its signal."""
    args = [spec.name for spec in operands if spec.is_arg]
    written = tuple(args.index(role) for role in (result, "signal") if role in args)
    return OpDef(
        name, operands, _type_of(result), Effects(view_of=args.index(result), writes=written)
    )


#: The collectives that only parse, as ops; a builtin package may implement any of them.
PARSE_ONLY_OPS: tuple[OpDef, ...] = (
    # allreduce(target, signal=<synthesized on the HOST rail>, *, op, mode, core_num)
    _parse_only(
        Op.ALLREDUCE,
        (
            Operand("target"),
            optional("signal"),
            _reduction(),
            optional("mode", Kind.STR, keyword_only=True, default="mesh"),
            optional(Kwarg.CORE_NUM, Kind.ANY, keyword_only=True, default=1, none_omits=False),
        ),
        "target",
    ),
    _parse_only(
        Op.ALLGATHER, (Operand("local_data"), Operand("target"), Operand("signal")), "target"
    ),
    _parse_only(Op.REDUCE_SCATTER, (Operand("target"), Operand("signal"), _reduction()), "target"),
    _parse_only(
        Op.BROADCAST,
        (Operand("target"), Operand("signal"), Operand("root", Kind.ANY, keyword_only=True)),
        "target",
    ),
    _parse_only(Op.ALL_TO_ALL, (Operand("input"), Operand("target"), Operand("signal")), "target"),
    _parse_only(Op.BARRIER, (Operand("signal"),), "signal"),
)
