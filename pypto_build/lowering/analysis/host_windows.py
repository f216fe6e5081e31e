"""The HOST window binding: what each value of a lowered HOST orchestrator is at run time.

A HOST orchestrator runs on the host, once, for every rank. Its values are of three kinds: host
tensors (the caller's arrays and regions of them, one per run), scalars, and window views — a
view of a comm domain's window buffer is a *different* tensor on every rank, so the generated
orchestrator does not hold it in a variable; it rebuilds it, for the dispatch's device, wherever
a dispatch uses it. For that, every use of a window name must denote one view — buffer, shape,
strides and element offset — whatever path reached it. This analysis computes that binding on
the forward driver and rejects, at the construct, everything a HOST orchestrator cannot run:

* a window name bound to different views on different paths, or to a different view in a later
  iteration of a loop than in the first, once a use could see either (a name bound to the same
  view in every iteration, as upstream's per-device loops bind theirs, is one binding);
* an op other than the views (``pl.slice``, ``pl.reshape``, ``pl.view``, ``pl.set_validshape``),
  ``pld.window``, ``pld.world_size`` and, as a dispatch argument, ``pld.get_comm_ctx``;
* a call of anything but a CHIP orchestration, or a dispatch without ``device=``, or one whose
  result is used (a chip orchestration returns results through its Out/InOut arguments);
* a strided region of a host tensor reaching a dispatch (PyPTO's runtime takes contiguous host
  tensors only), or reshaped; a reshaped strided region of a window;
* element types a runtime tensor cannot hold, Out scalars, tuple assignments.

The HOST codegen reads the binding (:meth:`HostWindows.value`) to emit each view where it is
used, so the two cannot disagree about which view a name denotes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Self, TypeAlias

from pypto_build.lowering.analysis.dataflow import FlowState, ForwardAnalysis, Value
from pypto_build.lowering.builtin_registry import builtin_op
from pypto_build.lowering.diagnostics import InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    AssignStmt,
    BinaryOp,
    Call,
    CommDomainScopeStmt,
    ConstInt,
    DataType,
    DistributedTensorType,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    GlobalVar,
    IfStmt,
    MakeTuple,
    Param,
    ParamDirection,
    Program,
    ReturnStmt,
    ScalarType,
    Stmt,
    TensorType,
    TupleGetItem,
    UnaryOp,
    Var,
    WhileStmt,
)
from pypto_build.lowering.ir.names import Kwarg, Op, arg_directions, device, kwarg
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.pass_names import CHECK_LEGALITY
from pypto_build.lowering.runtime_facts import BINARY_OPERATORS, RUNTIME_DTYPES

PHASE = CHECK_LEGALITY

#: Ops a HOST orchestrator evaluates as views of a host tensor or a window.
VIEW_OPS = frozenset({Op.TENSOR_SLICE, Op.TENSOR_RESHAPE, Op.TENSOR_VIEW, Op.TENSOR_SET_VALIDSHAPE})

#: The scalars a builtin dispatch's entry may declare (``[abi.entry] scalars``) that a HOST
#: orchestrator supplies: the domain size, the rank's CommContext, the requested block limit.
ENTRY_SCALARS = frozenset({"nranks", "comm_context", Kwarg.CORE_NUM.value})


def unsupported(what: str, span: Span) -> ProgramError:
    return ProgramError(f"{what} is not supported in a HOST orchestrator", span, PHASE)


# --- values --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    """A scalar (a Python number or bool on the host)."""


@dataclass(frozen=True)
class HostTensor:
    """A host tensor: a parameter or a region of one; ``contiguous`` when its elements are
    packed row-major."""

    shape: tuple[int, ...]
    contiguous: bool = True


@dataclass(frozen=True)
class WindowBuffer:
    """A window buffer, allocated by comm domain scope ``scope``."""

    name: str
    scope: str


def buffer_name(stmt: AssignStmt) -> str:
    """The name the program gave the window buffer ``stmt`` allocates: its ``name=`` when given,
    else its variable's. The IR names a buffer by its variable (views refer to it); this is the
    name its comm domain creates it under, so a run's windows read back as the program calls
    them."""
    given = kwarg(stmt.value, Kwarg.NAME) if isinstance(stmt.value, Call) else None
    return given if isinstance(given, str) and given else stmt.targets[0].name


@dataclass(frozen=True)
class RuntimeOffset:
    """The element offset a slice at a runtime position adds; ``site`` identifies the slice
    call, where the orchestrator computes it once (a later rebinding must not change it)."""

    site: int
    starts: tuple[Expr, ...]
    strides: tuple[int, ...]


#: One term of a view's element offset in its buffer.
OffsetTerm = int | RuntimeOffset


@dataclass(frozen=True)
class WindowView:
    """A view of window buffer ``buffer`` of comm domain scope ``scope``: one tensor per rank,
    described by its shape, element strides and element offset (a sum of terms) in the buffer."""

    scope: str
    buffer: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: DataType
    offset: tuple[OffsetTerm, ...] = ()

    @property
    def is_packed(self) -> bool:
        return self.strides == row_major(self.shape)


@dataclass(frozen=True)
class Conflict:
    """A name bound to different values on two paths joined at ``span`` (``first`` on one,
    ``second`` on the other): an error once used. At a loop's head the paths are the loop's
    entry and the end of an iteration, so the name would denote another view in a later
    iteration than in the first."""

    span: Span
    first: HostValue
    second: HostValue
    loop: bool = False
    name: str = ""

    def error(self, use: Span) -> ProgramError:
        difference = _difference(self.first, self.second)
        if not self.loop:
            what = f"'{self.name}', bound to different windows on different paths ({difference}),"
            return unsupported(what, self.span)
        return ProgramError(
            f"window '{self.name}' denotes a different view in a later iteration of the loop at "
            f"line {self.span.line} than in the first ({difference}): a HOST orchestrator "
            "rebuilds a window where it is used, so every use must denote one view (bind it to "
            "the same view in every iteration, or give each view its own name)",
            use,
            PHASE,
        )


HostValue: TypeAlias = Scalar | HostTensor | WindowBuffer | WindowView | Conflict
SCALAR = Scalar()
_Value: TypeAlias = Value[HostValue]


def _describe(value: HostValue) -> str:
    """``value`` in a diagnostic's words."""
    if isinstance(value, WindowView):
        shape = list(value.shape)
        where = ""
        if value.offset:
            constant = all(isinstance(term, int) for term in value.offset)
            where = (
                f" at element offset {sum(t for t in value.offset if isinstance(t, int))}"
                if constant
                else " at an offset computed at run time"
            )
        strided = "" if value.is_packed else f" with strides {list(value.strides)}"
        return f"a {shape} {value.dtype.name} view of buffer '{value.buffer}'{where}{strided}"
    if isinstance(value, WindowBuffer):
        return f"window buffer '{value.name}'"
    if isinstance(value, HostTensor):
        return f"a {list(value.shape)} host tensor"
    if isinstance(value, Conflict):
        return "a value that differs by path"
    return "a scalar"


def _difference(first: HostValue, second: HostValue) -> str:
    """What tells two values apart, for the diagnostic of a name bound to both."""
    text = f"{_describe(first)}, then {_describe(second)}"
    if isinstance(first, WindowView) and isinstance(second, WindowView):
        fields = (
            ("buffer", first.buffer, second.buffer),
            ("shape", first.shape, second.shape),
            ("element type", first.dtype, second.dtype),
            ("strides", first.strides, second.strides),
            ("offset", first.offset, second.offset),
        )
        differ = [label for label, one, other in fields if one != other]
        if differ:
            text += f": they differ in {' and '.join(differ)}"
    return text


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """The element strides of a packed row-major tensor of ``shape``."""
    strides = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _region_is_contiguous(shape: Sequence[int], region: Sequence[int]) -> bool:
    """Whether the ``region`` extents of a packed ``shape`` are packed too: after the first
    dimension the region spans more than one of, every dimension must be whole."""
    spanning = [dim for dim, extent in enumerate(region) if extent != 1]
    if not spanning:
        return True
    return all(region[dim] == shape[dim] for dim in range(spanning[0] + 1, len(shape)))


@dataclass
class _State(FlowState[HostValue]):
    def join(self, other: Self, join: Callable[[_Value, _Value], _Value]) -> Self:
        """A conflict is named after the name it is joined for."""
        joined = super().join(other, join)
        for name, value in joined.env.items():
            if isinstance(value, Conflict) and not value.name:
                joined.env[name] = dataclasses.replace(value, name=name)
        return joined


# --- the analysis ------------------------------------------------------------------------


class HostWindows(ForwardAnalysis[HostValue, _State]):
    """The binding of one lowered HOST orchestrator (raises its first illegal construct)."""

    def __init__(self, program: Program, func: Function) -> None:
        super().__init__(program, func)
        #: Where the state is joined (the innermost ``if`` or loop being walked), and whether
        #: that is a loop.
        self._joins: list[tuple[Span, bool]] = [(func.span, False)]
        self._stmt: Stmt | None = None
        #: Expressions evaluated for their effect (a dispatch), by identity.
        self._effects: set[int] = set()
        #: ``pld.get_comm_ctx`` calls that are dispatch arguments, by identity.
        self._contexts: set[int] = set()
        #: The value of each evaluated expression, by (statement, expression) identity.
        self._values: dict[tuple[int, int], _Value] = {}
        self.run(_State({}))

    def value(self, stmt: Stmt, expr: Expr) -> _Value:
        """The value of ``expr`` as statement ``stmt`` evaluates it."""
        found = self._values.get((id(stmt), id(expr)))
        if found is None:
            where = expr_span(expr, expr_span(stmt, self.func.span))
            raise InternalError(f"{PHASE}: {type(expr).__name__} at {where} was not analysed")
        return found

    # -- lattice ------------------------------------------------------------------------------

    def join_leaves(self, a: HostValue, b: HostValue) -> HostValue:
        if a == b:
            return a
        if isinstance(a, HostTensor) and isinstance(b, HostTensor) and a.shape == b.shape:
            return HostTensor(a.shape, a.contiguous and b.contiguous)
        if isinstance(a, Conflict):
            return a
        if isinstance(b, Conflict):
            return b
        span, loop = self._joins[-1]
        return Conflict(span, a, b, loop)

    def bottom(self) -> HostValue:
        return SCALAR

    # -- statements ---------------------------------------------------------------------------

    def exec_stmt(self, stmt: Stmt, state: _State) -> _State:
        if isinstance(stmt, AssignStmt) and _is_op(stmt.value, Op.ALLOC_WINDOW_BUFFER):
            self.at_stmt(stmt, state)
            return self._allocation(stmt, state)
        if isinstance(stmt, CommDomainScopeStmt):
            for buffer in stmt.buffers:
                state.env[buffer] = WindowBuffer(buffer, stmt.name)
        joins = isinstance(stmt, IfStmt | ForStmt | WhileStmt)
        if joins:
            self._joins.append(
                (expr_span(stmt, self.func.span), isinstance(stmt, ForStmt | WhileStmt))
            )
        try:
            return super().exec_stmt(stmt, state)
        finally:
            if joins:
                self._joins.pop()

    def at_stmt(self, stmt: Stmt, state: _State) -> None:
        if isinstance(stmt, AssignStmt) and len(stmt.targets) != 1:
            raise unsupported("a tuple assignment", stmt.span)

    def stmt_expr(self, stmt: Stmt, expr: Expr, state: _State) -> _Value:
        """A statement's expression; one evaluated for its effect (an expression statement, a
        returned value) may be a dispatch, and a dispatch's CommCtx arguments are the
        ``pld.get_comm_ctx`` of a window."""
        self._stmt = stmt
        if isinstance(expr, MakeTuple | TupleGetItem):
            raise unsupported(f"a {type(expr).__name__}", expr_span(expr, self._span()))
        effect = isinstance(stmt, EvalStmt | ReturnStmt)
        self._effects = {id(expr)} if effect else set()
        dispatch = effect and isinstance(expr, Call) and isinstance(expr.op, GlobalVar)
        self._contexts = {
            id(arg)
            for arg in (expr.args if dispatch and isinstance(expr, Call) else ())
            if _is_op(arg, Op.GET_COMM_CTX)
        }
        return self.eval(expr, state)

    def _allocation(self, stmt: AssignStmt, state: _State) -> _State:
        """``buf = pld.alloc_window_buffer(...)``: allocated by its scope, which bound it."""
        (target,) = stmt.targets
        if not isinstance(state.env.get(target.name), WindowBuffer):
            raise InternalError(f"{PHASE}: window buffer '{target.name}' has no scope")
        return state

    # -- transfer functions -------------------------------------------------------------------

    def eval(self, expr: Expr, state: _State) -> _Value:
        value = super().eval(expr, state)
        if isinstance(value, Conflict):
            raise value.error(expr_span(expr, self._span()))
        if self._stmt is not None:
            self._values[(id(self._stmt), id(expr))] = value
        return value

    def param(self, param: Param) -> _Value:
        var = param.var
        span = expr_span(var, self.func.span)
        if isinstance(var.type, TensorType) and not isinstance(var.type, DistributedTensorType):
            _require_runtime_dtype(var.type.dtype, f"tensor parameter '{var.name}'", span)
            return HostTensor(var.type.shape)
        if isinstance(var.type, ScalarType):
            if param.direction is not ParamDirection.In:
                raise unsupported(f"{param.direction.value} scalar '{var.name}'", span)
            _require_runtime_dtype(var.type.dtype, f"scalar parameter '{var.name}'", span)
            return SCALAR
        raise unsupported(f"parameter '{var.name}' of type {type(var.type).__name__}", span)

    def loop_index(self, stmt: ForStmt) -> _Value:
        return SCALAR

    def unbound(self, var: Var) -> _Value:
        raise InternalError(f"{PHASE}: unbound name '{var.name}'")

    def scalar(self, expr: Expr, state: _State) -> _Value:
        if isinstance(expr, BinaryOp) and expr.op not in BINARY_OPERATORS:
            raise unsupported(f"a {type(expr).__name__}", expr_span(expr, self._span()))
        if isinstance(expr, UnaryOp) and expr.op not in ("-", "not"):
            raise unsupported(f"a {type(expr).__name__}", expr_span(expr, self._span()))
        return SCALAR

    def op_call(self, call: Call, args: tuple[_Value, ...], state: _State) -> _Value:
        op = call.callee_name
        span = call.span
        if op == Op.ALLOC_WINDOW_BUFFER:
            raise unsupported(f"{Op.ALLOC_WINDOW_BUFFER} inside an expression", span)
        if op == Op.WINDOW:
            return self._window(call, args)
        if op == Op.WORLD_SIZE:
            return SCALAR
        if op == Op.GET_COMM_CTX and id(call) in self._contexts:
            if not isinstance(args[0], WindowView):
                raise InternalError(f"{PHASE}: {Op.GET_COMM_CTX} of a non-window")
            return SCALAR
        if op in VIEW_OPS:
            return self._view(call, args)
        if builtin_op(op) is not None and id(call) in self._effects:
            self._builtin_dispatch(call, args)
            return SCALAR
        raise unsupported(f"'{op}'", span)

    def _window(self, call: Call, args: tuple[_Value, ...]) -> WindowView:
        buffer, ty = args[0], call.type
        if not isinstance(buffer, WindowBuffer) or not isinstance(ty, TensorType):
            raise InternalError(f"{PHASE}: malformed {Op.WINDOW}")
        _require_runtime_dtype(ty.dtype, "a window", call.span)
        return WindowView(buffer.scope, buffer.name, ty.shape, row_major(ty.shape), ty.dtype)

    def _view(self, call: Call, args: tuple[_Value, ...]) -> HostValue:
        op, span = call.callee_name, call.span
        source, ty = args[0], call.type
        if not isinstance(ty, TensorType) or not isinstance(source, HostTensor | WindowView):
            raise InternalError(f"{PHASE}: {op} of a non-tensor")
        if op == Op.TENSOR_SLICE:
            offsets = call.args[2]
            if not isinstance(offsets, MakeTuple):
                raise unsupported(f"{Op.TENSOR_SLICE} offsets that are not a list", span)
            if isinstance(source, WindowView):
                return _window_slice(call, source, offsets, ty.shape)
            contiguous = source.contiguous and _region_is_contiguous(source.shape, ty.shape)
            return HostTensor(ty.shape, contiguous)
        if op == Op.TENSOR_RESHAPE or kwarg(call, Kwarg.SHAPE) is not None:
            if isinstance(source, WindowView):
                if not source.is_packed:
                    raise unsupported("reshaping a strided region of a window", span)
                return dataclasses.replace(source, shape=ty.shape, strides=row_major(ty.shape))
            if not source.contiguous:
                raise unsupported("reshaping a strided region of a host tensor", span)
            return HostTensor(ty.shape)
        # The valid region and layout are metadata of the program, not of the runtime's tensors.
        return source

    def function_call(self, call: Call, args: tuple[_Value, ...], state: _State) -> _Value:
        name = call.callee_name
        span = call.span
        if id(call) not in self._effects:
            raise unsupported(
                f"using the result of dispatching '{name}' (a chip orchestration returns its "
                "results through its Out/InOut arguments)",
                span,
            )
        callee = self.program.function(name) if self.program is not None else None
        if callee is None or not callee.is_chip_orchestration:
            kind = "an unknown function" if callee is None else f"a {callee.func_type.value}"
            raise unsupported(
                f"calling '{name}' ({kind} function; only CHIP orchestrations are dispatched)",
                span,
            )
        _require_device(call)
        directions = arg_directions(call)
        if directions is None:
            raise InternalError(f"{PHASE}: dispatch of '{name}' lacks arg_directions")
        for arg, direction, value in zip(call.args, directions, args, strict=True):
            if direction is not None:
                _require_dispatchable(arg, value, span)
        return SCALAR

    def _builtin_dispatch(self, call: Call, args: tuple[_Value, ...]) -> None:
        builtin = builtin_op(call.callee_name)
        assert builtin is not None
        _require_device(call)
        if not all(isinstance(value, WindowView) for value in args):
            raise InternalError(f"{PHASE}: {call.op} operands must be window views")
        for scalar in builtin.package.abi.entry.scalars:
            if scalar not in ENTRY_SCALARS:
                raise ProgramError(
                    f"the entry of {call.op} expects scalar '{scalar}', which a HOST "
                    f"orchestrator cannot supply (known: {', '.join(sorted(ENTRY_SCALARS))})",
                    call.span,
                    PHASE,
                )

    def _span(self) -> Span:
        """The statement being evaluated, where a construct without a span of its own is."""
        return self.func.span if self._stmt is None else expr_span(self._stmt, self.func.span)


def _is_op(expr: Expr, op: Op) -> bool:
    return isinstance(expr, Call) and expr.op == op


def _require_device(call: Call) -> None:
    if device(call) is None:
        raise ProgramError(
            f"a HOST orchestrator runs '{call.callee_name}' on one device at a time: "
            "pass device=<rank>",
            call.span,
            PHASE,
        )


def _require_dispatchable(arg: Expr, value: _Value, span: Span) -> None:
    """A tensor argument of a dispatch: a window view, or a contiguous host tensor."""
    if isinstance(value, WindowView):
        return
    if not isinstance(value, HostTensor):
        raise InternalError(f"{PHASE}: tensor argument of a dispatch is not a tensor")
    if not value.contiguous:
        what = f"'{arg.name}'" if isinstance(arg, Var) else "this region"
        raise ProgramError(
            f"{what} is a strided region of a host tensor: PyPTO's runtime passes only "
            "contiguous host tensors to a chip (slice whole rows, or pass the whole tensor "
            "and slice it in the CHIP orchestration)",
            span,
            PHASE,
        )


def _require_runtime_dtype(dtype: DataType, what: str, span: Span) -> None:
    if dtype not in RUNTIME_DTYPES:
        raise unsupported(f"{what} of {dtype.value}", span)


def _window_slice(
    call: Call, source: WindowView, offsets: MakeTuple, shape: tuple[int, ...]
) -> WindowView:
    """A region of a window view: its offset gains the slice's element offset, a constant or a
    runtime term computed where the slice is."""
    if all(isinstance(item, ConstInt) for item in offsets.items):
        constant = sum(
            item.value * stride
            for item, stride in zip(offsets.items, source.strides, strict=True)
            if isinstance(item, ConstInt)
        )
        term: tuple[OffsetTerm, ...] = (constant,) if constant else ()
    else:
        term = (RuntimeOffset(id(call), offsets.items, source.strides),)
    return dataclasses.replace(source, shape=shape, offset=(*source.offset, *term))
