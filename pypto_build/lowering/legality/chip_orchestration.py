"""What a CHIP orchestration may contain, so that its AICPU entry can be generated.

A lowered CHIP orchestration becomes C++ replayed in program order (the orchestration codegen of
``chip_build``): kernel calls become task submissions, views become runtime descriptors, scalars
``int64_t`` arithmetic. This module rejects, at the statement, every construct that has no such
form, so that ``lower`` refuses exactly what a render would, and the codegen meets only programs
it can generate. The checks run in the codegen's own order: the kernels called (in order of
first call), the names' kinds (parameters first, then in order of definition), then the body.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from pypto_build.lowering.analysis.returns import returned_params
from pypto_build.lowering.diagnostics import InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    AssignStmt,
    AttrValue,
    BinaryOp,
    Call,
    CommCtxType,
    ConstBool,
    ConstFloat,
    ConstInt,
    DataType,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    GlobalVar,
    IfStmt,
    MakeTuple,
    Program,
    ReturnStmt,
    ScalarType,
    SeqStmts,
    Stmt,
    TensorType,
    TupleGetItem,
    Type,
    UnaryOp,
    Var,
    WhileStmt,
)
from pypto_build.lowering.ir.memo import per_function
from pypto_build.lowering.ir.names import CallAttr, Kwarg, Op, call_attrs, kwarg
from pypto_build.lowering.ir.walk import walk_calls, walk_stmts
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.pass_names import CHECK_LEGALITY
from pypto_build.lowering.runtime_facts import BINARY_OPERATORS, DESCRIPTOR_DIM_MAX, RUNTIME_DTYPES

PHASE = CHECK_LEGALITY

#: Scalar types an AICPU orchestration computes with (no half-precision arithmetic there).
SCALAR_DTYPES = frozenset(DataType) - {DataType.FP16, DataType.BF16}

#: Ops a CHIP orchestration turns into runtime descriptors.
VIEW_OPS = frozenset({Op.TENSOR_SLICE, Op.TENSOR_RESHAPE, Op.TENSOR_VIEW, Op.TENSOR_SET_VALIDSHAPE})

_FLOOR = frozenset({"//", "%"})
_UNARY = frozenset({"-", "not"})
#: The scalars the entry computes with as they are (a tuple: a union is made at every test).
_PLAIN_SCALARS = (ConstBool, ConstInt, Var)
#: What a launch attr may hold besides a bool.
_LAUNCH_VALUES = (int, Expr)


def unsupported(what: str, span: Span) -> ProgramError:
    return ProgramError(f"{what} is not supported in a CHIP orchestration", span, PHASE)


@dataclass(frozen=True)
class _Unknown:
    """A kernel result that is not provably one of its arguments: an error once used."""

    error: ProgramError


#: What an expression evaluates to, as far as legality is concerned.
_Kind = str | _Unknown | tuple["_Kind", ...]
_TENSOR = "tensor"
_SCALAR = "scalar"


def _known(kind: _Kind) -> _Kind:
    if isinstance(kind, _Unknown):
        raise kind.error
    return kind


def check_chip_orchestration(program: Program, orch: Function) -> None:
    """Reject the first construct of ``orch`` that has no generated form."""
    called_kernels(program, orch)
    _check_names(orch)
    _Checker(program, orch).block(orch.body)


@per_function
def called_kernels(program: Program, orch: Function) -> tuple[Function, ...]:
    """The kernels ``orch`` calls, in order of first call (their position is their func_id);
    a call of anything but a kernel is a diagnostic: a CHIP orchestration submits tasks.
    The legality pass, its checks and each chip's render ask it of the same orchestration, so
    it is found once (:mod:`~pypto_build.lowering.ir.memo`; a diagnostic is not remembered)."""
    found: dict[str, Function] = {}
    for call in walk_calls(orch.body):
        if not isinstance(call.op, GlobalVar) or call.op.name in found:
            continue
        callee = program.function(call.op.name)
        if callee is None:
            raise InternalError(f"{PHASE}: call of unknown function '{call.op.name}'")
        if not callee.func_type.is_kernel:
            raise ProgramError(
                f"calling '{callee.name}' ({callee.func_type.value} function) is not supported "
                "in a CHIP orchestration: it can only submit kernels (InCore, AIV or AIC "
                "functions)",
                call.span,
                PHASE,
            )
        found[callee.name] = callee
    return tuple(found.values())


def value_kind(ty: Type) -> str | None:
    """What a name of type ``ty`` holds in a CHIP orchestration: a tensor, a CommCtx (passed
    as its address) or a scalar of one type; None if it cannot be held."""
    if isinstance(ty, TensorType):
        return "a tensor"
    if isinstance(ty, CommCtxType):
        return "a CommCtx"
    if isinstance(ty, ScalarType) and ty.dtype in SCALAR_DTYPES:
        return f"a {type_text(ty)}"
    return None


def _check_names(orch: Function) -> None:
    """Each name holds one kind of value for the whole function (one C++ local each)."""
    kinds: dict[str, str] = {}
    for name, ty, span in _definitions(orch):
        kind = value_kind(ty)
        if kind is None:
            raise ProgramError(
                f"'{name}' has type {type_text(ty)}, which is not supported in a CHIP "
                "orchestration (tensors, integer, float and bool scalars are)",
                span,
                PHASE,
            )
        known = kinds.setdefault(name, kind)
        if known != kind:
            raise ProgramError(
                f"'{name}' is bound to {kind} here and to {known} elsewhere: a name of a CHIP "
                "orchestration must keep one kind of value",
                span,
                PHASE,
            )


def _definitions(orch: Function) -> Iterator[tuple[str, Type, Span]]:
    for param in orch.params:
        yield param.var.name, param.var.type, param.var.span
    for stmt in walk_stmts(orch.body):
        if isinstance(stmt, AssignStmt):
            for target in stmt.targets:
                yield target.name, target.type, expr_span(target, stmt.span)
        elif isinstance(stmt, ForStmt):
            yield stmt.var.name, stmt.var.type, expr_span(stmt.var, stmt.span)


class _Checker:
    """Walks the body in program order, as the codegen replays it."""

    def __init__(self, program: Program, orch: Function) -> None:
        self.program = program
        self.orch = orch

    def block(self, body: SeqStmts) -> None:
        for stmt in body.stmts:
            self.stmt(stmt)

    def stmt(self, stmt: Stmt) -> None:
        if isinstance(stmt, AssignStmt):
            self._assign(stmt)
        elif isinstance(stmt, EvalStmt):
            self.value(stmt.expr, stmt.span)
        elif isinstance(stmt, ReturnStmt):
            for value in stmt.values:
                self.value(value, stmt.span)
        elif isinstance(stmt, IfStmt):
            self.scalar(stmt.cond, stmt.span)
            self.block(stmt.then_body)
            if stmt.else_body is not None:
                self.block(stmt.else_body)
        elif isinstance(stmt, ForStmt):
            self._for(stmt)
        elif isinstance(stmt, WhileStmt):
            self.scalar(stmt.cond, stmt.span)
            self.block(stmt.body)
        elif isinstance(stmt, SeqStmts):
            self.block(stmt)
        else:
            raise unsupported(f"a {type(stmt).__name__}", expr_span(stmt, self.orch.span))

    def _for(self, stmt: ForStmt) -> None:
        # A constant zero step is the front end's diagnostic; a runtime one fails at run time.
        for bound in (stmt.start, stmt.stop, stmt.step):
            self.scalar(bound, stmt.span)
        self.block(stmt.body)

    def _assign(self, stmt: AssignStmt) -> None:
        kind = _known(self.value(stmt.value, stmt.span))
        if len(stmt.targets) == 1:
            kinds: tuple[_Kind, ...] = (kind,)
        elif isinstance(kind, tuple) and len(kind) == len(stmt.targets):
            kinds = kind
        else:
            raise InternalError(f"{PHASE}: {len(stmt.targets)} targets for a non-tuple value")
        for target, item in zip(stmt.targets, kinds, strict=True):
            if isinstance(_known(item), tuple):
                raise unsupported("binding a tuple to one name", expr_span(target, stmt.span))

    # -- values ------------------------------------------------------------------------------

    def value(self, expr: Expr, at: Span) -> _Kind:
        if isinstance(expr, Var):  # most operands: no span needed
            return _TENSOR if isinstance(expr.type, TensorType) else _SCALAR
        span = expr_span(expr, at)
        if isinstance(expr, Call) and isinstance(expr.op, GlobalVar):
            return self._kernel_call(expr, span)
        if isinstance(expr, Call):
            return self._tensor_op(expr, span)
        if isinstance(expr, TupleGetItem):
            inner = _known(self.value(expr.tuple, span))
            if not isinstance(inner, tuple) or not 0 <= expr.index < len(inner):
                raise InternalError(f"{PHASE}: tuple index {expr.index} of a non-tuple value")
            return inner[expr.index]
        if isinstance(expr, MakeTuple):
            raise unsupported("a tuple value", span)
        self.scalar(expr, span)
        return _SCALAR

    def scalar(self, expr: Expr, at: Span) -> None:
        """A scalar expression the entry computes with ``int64_t`` (or its own type)."""
        span = expr_span(expr, at)
        if isinstance(expr, _PLAIN_SCALARS):
            return
        if isinstance(expr, ConstFloat):
            if not math.isfinite(expr.value):
                raise unsupported(f"the constant {float(expr.value)!r}", span)
            return
        if isinstance(expr, BinaryOp):
            self.scalar(expr.lhs, span)
            self.scalar(expr.rhs, span)
            if expr.op in _FLOOR:
                self._scalar_type(expr.type, span)
            elif expr.op not in BINARY_OPERATORS:
                raise unsupported(f"the operator '{expr.op}'", span)
            return
        if isinstance(expr, UnaryOp):
            self.scalar(expr.operand, span)
            if expr.op not in _UNARY:
                raise unsupported(f"the operator '{expr.op}'", span)
            return
        if isinstance(expr, Call):
            raise unsupported(f"'{expr.callee_name}' as a scalar", span)
        raise unsupported(f"a {type(expr).__name__} as a scalar", span)

    @staticmethod
    def _scalar_type(ty: Type, span: Span) -> None:
        if not (isinstance(ty, ScalarType) and ty.dtype in SCALAR_DTYPES):
            raise unsupported(f"a scalar of type {type_text(ty)}", span)

    def _tensor_op(self, call: Call, span: Span) -> _Kind:
        op = call.callee_name
        if op == Op.TENSOR_CREATE:
            _check_shape(call.type, span)
            dtype = kwarg(call, Kwarg.DTYPE)
            if not isinstance(dtype, DataType) or dtype not in RUNTIME_DTYPES:
                raise unsupported(f"{Op.TENSOR_CREATE} of dtype {dtype}", span)
            return _TENSOR
        if op not in VIEW_OPS:
            raise unsupported(f"'{op}'", span)
        if _known(self.value(call.args[0], span)) != _TENSOR:
            raise InternalError(f"{PHASE}: expected a tensor operand")
        if op == Op.TENSOR_SLICE:
            offsets = call.args[2]
            if not isinstance(offsets, MakeTuple):
                raise unsupported(f"{Op.TENSOR_SLICE} offsets that are not a list", span)
            for item in offsets.items:
                self.scalar(item, span)
            _check_shape(call.type, span)
        elif op == Op.TENSOR_RESHAPE or kwarg(call, Kwarg.SHAPE) is not None:
            _check_shape(call.type, span)
        else:
            for extent in call.args[1:]:
                self.scalar(extent, span)
        return _TENSOR

    def _kernel_call(self, call: Call, span: Span) -> _Kind:
        callee = self.program.function(call.callee_name)
        if callee is None:
            raise InternalError(f"{PHASE}: call of unknown kernel '{call.callee_name}'")
        attrs = call_attrs(call)  # the four asked of every call, in one pass over its attrs
        if isinstance(attrs.get(CallAttr.DEVICE), Expr):
            raise unsupported(
                "a device= dispatch (only HOST orchestrators dispatch to devices)", span
            )
        args = [_known(self.value(arg, span)) for arg in call.args]
        for param, kind in zip(callee.params, args, strict=True):
            if kind == _SCALAR and not isinstance(param.var.type, CommCtxType):
                self._scalar_type(param.var.type, call.span)
        core_num = attrs.get(CallAttr.CORE_NUM)
        if core_num is not None:
            self._launch_attr(core_num, CallAttr.CORE_NUM, call.span)
        sync_start = attrs.get(CallAttr.SYNC_START)
        if sync_start is not None and not isinstance(sync_start, ConstBool | bool):
            self._launch_attr(sync_start, CallAttr.SYNC_START, call.span)
        results: list[_Kind] = [
            self._result(callee, index, position, args, span)
            for index, position in enumerate(returned_params(callee))
        ]
        result: _Kind = results[0] if len(results) == 1 else tuple(results)
        return (result, _SCALAR) if attrs.get(CallAttr.SUBMIT) is True else result

    def _launch_attr(self, value: AttrValue, key: str, span: Span) -> None:
        """A launch-spec attr: a scalar expression (or an integer)."""
        if isinstance(value, bool) or not isinstance(value, _LAUNCH_VALUES):
            raise ProgramError(f"{key}= must be a scalar expression, got {value!r}", span, PHASE)
        if isinstance(value, Expr):
            self.scalar(value, span)

    @staticmethod
    def _result(
        callee: Function, index: int, position: int | None, args: list[_Kind], span: Span
    ) -> _Kind:
        if position is not None and args[position] == _TENSOR:
            return _TENSOR
        return _Unknown(
            ProgramError(
                f"cannot tell which argument kernel '{callee.name}' returns as result {index}: "
                "a kernel result is one of its Out/InOut arguments; end the kernel with "
                "'return <param>' or declare one written parameter per result",
                span,
                PHASE,
            )
        )


def _check_shape(ty: Type, span: Span) -> None:
    if not isinstance(ty, TensorType):
        raise InternalError(f"{PHASE}: expected a tensor type, got {ty}")
    for dim in ty.shape:
        if not 0 <= dim <= DESCRIPTOR_DIM_MAX:
            raise ProgramError(
                f"dimension {dim} does not fit the runtime descriptor (0 .. {DESCRIPTOR_DIM_MAX})",
                span,
                PHASE,
            )


def type_text(ty: Type) -> str:
    """A type as diagnostics name it: ``Scalar[int32]``, ``Tensor``, ``CommCtx``."""
    if isinstance(ty, ScalarType):
        return f"Scalar[{ty.dtype.value}]"
    return type(ty).__name__.removesuffix("Type")
