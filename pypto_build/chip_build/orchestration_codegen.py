"""CHIP orchestration codegen: a lowered CHIP orchestration function -> its AICPU C++ source.

The runtime loads ``orchestration/<orch>.cpp`` of a sub-build and calls its
``aicpu_orchestration_entry(orch_args)`` once per run; the entry submits the kernels of the
pipeline as tasks, and the runtime orders them by the tensors each task reads and writes (its
TensorMap). So the source is the orchestration body replayed in program order:

* parameters are bound from ``orch_args``: tensor parameters, in order, to
  ``orch_args.tensor(i)``; every other parameter (scalars, and the CommCtx parameters that
  MaterializeDistTensorCtx added, which carry a ``CommContext`` device address), in order, to
  ``pypto_build::scalar_value<T>(orch_args.scalar(j))``;
* each kernel call is one task: a ``CoreTaskArgs`` with one ``add_input`` / ``add_output`` /
  ``add_inout`` per tensor argument as the call's ``arg_directions`` say (tensors first, the
  kernel ABI's order), then ``add_scalar`` per scalar, the launch spec from the call attrs
  (``core_num`` through the chip's launch-spec method, ``sync_start``), and
  ``rt_submit_aiv_task(<func_id>, ...)`` (``rt_submit_aic_task`` for an AIC kernel), where the
  func_id is the kernel's position in order of first call — the ``KERNELS`` entry of the
  sub-build's kernel_config.py;
* the orderings the runtime's TensorMap does not derive (the call's ``explicit_deps``,
  AutoDeriveTaskDependencies: a write after a read, a write after an ``Out`` write) go to the
  runtime as explicit dependencies: every task another task must follow keeps the id of its
  last submitted instance (``task<n>_last_``, invalid until it is first submitted), and the
  following task passes the valid ones to ``set_dependencies``;
* a kernel with ``require_contiguous_operands`` (the builtin collectives: a peer computes remote
  addresses from the packed shape) gets one ``is_contiguous`` check per tensor operand first; at
  the first violation the entry latches ``PTO2_ERROR_INVALID_ARGS`` and returns, so nothing
  further is submitted;
* a kernel call's result is the argument the kernel returns (:func:`returned_params`), so
  ``data = self.k(a, b)`` binds ``data`` to ``b``'s descriptor. Tensor names are therefore
  pointers to descriptors, reseated by assignment (which also makes rebinding in branches and
  loops exact); each view site (``pl.slice``, ``pl.reshape``, ``pl.view``, ``pl.create_tensor``)
  owns a descriptor declared once at function scope, so a pointer to it stays valid for the
  whole entry, as a Python name stays bound after the loop that assigned it;
* ``if``, ``while`` and ``for ... in pl.range`` become C++ control flow over ``int64_t``, with
  Python's floor division and modulo.

The lowering's CheckLegality pass has rejected everything else
(:mod:`pypto_build.lowering.legality.chip_orchestration`), so a construct without a C++ form
here is an internal error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from pypto_build.builtins.manifest import MIX
from pypto_build.chip_build.builtin_variants import chip_builtin_kernel
from pypto_build.chip_build.chips import Chip, CoreType
from pypto_build.chip_build.codegen_base import RUNTIME_DTYPES, StmtCodegen, call_directions
from pypto_build.lowering.analysis.returns import returned_params
from pypto_build.lowering.diagnostics import InternalError, Span
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
    Expr,
    ForStmt,
    Function,
    FunctionType,
    GlobalVar,
    IfStmt,
    MakeTuple,
    ParamDirection,
    Program,
    ScalarType,
    TensorType,
    TupleGetItem,
    Type,
    UnaryOp,
    Var,
    WhileStmt,
)
from pypto_build.lowering.ir.memo import per_function, per_node
from pypto_build.lowering.ir.names import (
    ArgDirection,
    CallAttr,
    Kwarg,
    Op,
    call_attrs,
    kwarg,
    requires_contiguous,
    task_deps,
    task_numbers,
)
from pypto_build.lowering.ir.walk import walk_calls, walk_exprs, walk_stmts
from pypto_build.lowering.legality.chip_orchestration import VIEW_OPS, called_kernels
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.runtime_facts import DESCRIPTOR_DIM_MAX
from pypto_build.tree_layout import INCLUDE

PHASE = "orchestration codegen"

#: Headers every generated orchestration includes: PyPTO's orchestration API (the runtime's own
#: header, or the simulator's implementation of it), then our helpers, which travel with the
#: sub-build and are named relative to the source (PyPTO's runtime compiles an orchestration
#: with no include directory of the tree).
INCLUDES = ("pto_orchestration_api.h", f"../{INCLUDE}/pypto_build/orchestration.h")
#: Marks the entry points exported from the orchestration's shared object.
EXPORT = '__attribute__((visibility("default")))'

#: Scalar types an AICPU orchestration computes with (no half-precision arithmetic there).
_SCALAR_C_TYPES = {
    dtype: dtype.c_type for dtype in DataType if dtype not in (DataType.FP16, DataType.BF16)
}

_BINARY = {"+", "-", "*", "<", "<=", ">", ">=", "==", "!="}
_LOGICAL = {"and": "&&", "or": "||"}
_FLOOR = {"//": "floordiv", "%": "floormod"}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT32_RANGE = range(-(2**31), 2**31)

# C++ keywords and alternative tokens, and every identifier the generated code itself uses: an
# IR name among them (or ending in "_", the suffix of generated names, or all upper case, like
# a macro) is emitted with a trailing "_", which keeps the renaming one-to-one.
_CPP_RESERVED_WORDS = """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl concept const consteval constexpr constinit const_cast continue
    co_await co_return co_yield decltype default delete do double dynamic_cast else enum
    explicit export extern false float for friend goto if inline int long mutable namespace new
    noexcept not not_eq nullptr operator or or_eq private protected public register
    reinterpret_cast requires return short signed sizeof static static_assert static_cast struct
    switch template this thread_local throw true try typedef typeid typename union unsigned
    using virtual void volatile wchar_t while xor xor_eq
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t std pypto_build
    orch_args ChipTensor ChipTaskArgs CoreTaskArgs PTO2OrchestrationConfig DataType TensorRef
    TensorCreateInfo TaskOutputTensors MixedKernels PTO2LaunchSpec PTO2Runtime PTO2ScopeGuard
    PTO2TaskId
    rt_submit_task rt_submit_aiv_task rt_submit_aic_task rt_report_fatal alloc_tensors
    current_runtime framework_current_runtime framework_bind_runtime rt_scope_begin rt_scope_end
    aicpu_orchestration_config aicpu_orchestration_entry main
"""
_CPP_RESERVED = frozenset(_CPP_RESERVED_WORDS.split())


def cpp_name(name: str) -> str:
    """The C++ identifier of IR name ``name`` (never a keyword or a generated name)."""
    if name.endswith("_") or name in _CPP_RESERVED or name.isupper():
        return name + "_"
    return name


@per_node
def kernel_core_types(func: Function) -> tuple[CoreType, ...]:
    """The cores a kernel runs on, one ``kernel_config.py`` entry each: AIC for an AIC
    function, AIC and AIV for a builtin whose package declares a MIX kernel (a cluster of one
    AIC and two AIV cores), else AIV (upstream's default)."""
    if func.func_type is FunctionType.AIC:
        return (CoreType.AIC,)
    builtin = chip_builtin_kernel(func)
    if builtin is not None and builtin.package.core_type == MIX:
        return (CoreType.AIC, CoreType.AIV)
    return (CoreType.AIV,)


@dataclass(frozen=True)
class KernelSlot:
    """One entry of a sub-build's kernels: a kernel on one core type, under its func_id."""

    func_id: int
    kernel: Function
    core_type: CoreType


@per_function
def kernel_slots(program: Program, orch: Function) -> tuple[KernelSlot, ...]:
    """The kernels ``orch`` submits, in order of first call, each on each of its core types:
    an entry's position is its func_id."""
    cores = [
        (kernel, core)
        for kernel in called_kernels(program, orch)
        for core in kernel_core_types(kernel)
    ]
    return tuple(KernelSlot(func_id, kernel, core) for func_id, (kernel, core) in enumerate(cores))


def generate_orchestration(program: Program, orch: Function, chip: Chip) -> str:
    """The C++ source of CHIP orchestration ``orch`` of ``program`` for ``chip``."""
    return orchestration_for_any_chip(program, orch).replace(
        _LAUNCH_METHOD, chip.launch_spec_method
    )


#: Where the source names the chip's launch-spec method (``set_block_num``, ``set_core_num``):
#: the only token of a generated orchestration that depends on the chip. It holds NUL
#: characters, which no identifier, number or message of a generated source can.
_LAUNCH_METHOD = "\0launch_spec_method\0"


@per_function
def orchestration_for_any_chip(program: Program, orch: Function) -> str:
    """The source of ``orch`` with a placeholder for the chip's launch-spec method, the only
    token that differs between chips (so it includes what every chip's includes): generated
    once per orchestration, whatever the number of chips a render targets."""
    if not orch.is_chip_orchestration:
        raise InternalError(f"{PHASE}: '{orch.name}' is not a CHIP orchestration")
    return _Codegen(program, orch).source()


# --- values ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tensor:
    """A tensor value: a C++ expression of type ``const ChipTensor*``."""

    pointer: str

    @cached_property
    def ref(self) -> str:
        """The descriptor itself: a local's is read by every task that takes it."""
        return self.pointer[1:] if self.pointer.startswith("&") else f"*{self.pointer}"


@dataclass(frozen=True)
class _Scalar:
    """A scalar value: a C++ expression (a CommCtx is its ``uint64_t`` address)."""

    text: str


@dataclass(frozen=True)
class _Unknown:
    """A kernel result that is not provably one of its arguments (never used: CheckLegality
    rejects a use)."""

    callee: str


_Value = _Tensor | _Scalar | _Unknown | tuple["_Value", ...]


def _known(value: _Value) -> _Tensor | _Scalar | tuple[_Value, ...]:
    if isinstance(value, _Unknown):
        raise InternalError(f"{PHASE}: the result of '{value.callee}' is used")
    return value


@dataclass(frozen=True)
class _TaskTemplate:
    """What a task of one kernel looks like, for one set of argument directions and one
    indentation: every kernel call of a program emits a task, mostly of a few kernels, so each
    is made once and only its name and operands are filled in."""

    #: The positions of the tensor arguments, in the order they are added.
    tensors: tuple[int, ...]
    #: The positions of the scalar arguments, each with the type its bits are passed as.
    scalars: tuple[tuple[int, str | None], ...]
    #: The positions of the tensor arguments checked for contiguity first.
    contiguous: tuple[int, ...]
    #: Their checks: ``str.format`` of their descriptors (:meth:`_Tensor.ref`), in order.
    checks: str
    #: The task's declaration and arguments: ``str.format`` of the operands (tensors, then
    #: scalars) and ``task``, the task's local.
    arguments: str
    #: The submit call up to its argument (:func:`_submit`).
    submit: str


# --- locals --------------------------------------------------------------------------------


Kind = Literal["tensor", "scalar"]


@dataclass(frozen=True)
class _Local:
    """A C++ local standing for an IR name: its identifier, kind and declared type."""

    name: str
    kind: Kind
    c_type: str


def _local_for(name: str, ty: Type, span: Span) -> _Local:
    if isinstance(ty, TensorType):
        return _Local(cpp_name(name), "tensor", "const ChipTensor*")
    if isinstance(ty, CommCtxType):
        return _Local(cpp_name(name), "scalar", "uint64_t")
    if isinstance(ty, ScalarType) and ty.dtype in _SCALAR_C_TYPES:
        return _Local(cpp_name(name), "scalar", _SCALAR_C_TYPES[ty.dtype])
    raise _unsupported(f"'{name}' of type {ty}", span)


def _unsupported(what: str, span: Span) -> InternalError:
    return InternalError(f"{PHASE}: {what} at {span} has no C++ form")


class _Codegen(StmtCodegen):
    INDENT = "  "
    # Results reach the caller through the Out/InOut arguments: a return only ends the entry.
    RETURN = "return;"

    def __init__(self, program: Program, orch: Function) -> None:
        # The body sits inside ``aicpu_orchestration_entry``.
        super().__init__(orch, depth=1)
        self.program = program
        self.func_ids: dict[str, dict[CoreType, int]] = {}
        for slot in kernel_slots(program, orch):
            self.func_ids.setdefault(slot.kernel.name, {})[slot.core_type] = slot.func_id
        self.locals: dict[str, _Local] = {}
        #: The tasks whose last submitted instance a later submit names as a dependency.
        self.followed = sorted(
            {
                dep
                for call in walk_calls(orch.body)
                for dep in task_deps(call, CallAttr.EXPLICIT_DEPS)
            }
        )
        self._templates: dict[tuple[str, tuple[ArgDirection, ...], str], _TaskTemplate] = {}
        self.views = 0
        self.tasks = 0
        self.loops = 0
        self.temps = 0
        #: The type each local was first made for: a name rebound to a value of that very type
        #: (most rebindings take a kernel's result, of its one return type) is that local.
        self._local_types: dict[str, Type] = {}
        self._declare_locals()
        #: The value each name reads as (most operands of a body are names).
        self.names: dict[str, _Tensor | _Scalar] = {
            name: _Tensor(local.name) if local.kind == "tensor" else _Scalar(local.name)
            for name, local in self.locals.items()
        }

    # -- output -----------------------------------------------------------------------------

    def source(self) -> str:
        self._block(self.func.body, final=True)
        body = self.lines
        self.lines = []
        self._entry_prologue()
        prologue = self.lines
        tensors, scalars = self._param_counts()
        out = [
            f"// Orchestration Function: {self.func.name}",
            "// Generated by pypto-build",
            "",
            "#include <cstdint>",
            "",
            *(f'#include "{header}"' for header in INCLUDES),
            "",
            'extern "C" {',
            "",
            EXPORT,
            "PTO2OrchestrationConfig aicpu_orchestration_config(const ChipTaskArgs& orch_args) {",
            "  (void)orch_args;",
            f"  // {tensors} tensor and {scalars} scalar arguments.",
            f"  return PTO2OrchestrationConfig{{{tensors + scalars}}};",
            "}",
            "",
            EXPORT,
            "void aicpu_orchestration_entry(const ChipTaskArgs& orch_args) {",
            *prologue,
            *body,
            "}",
            "",
            '}  // extern "C"',
        ]
        return "\n".join(out) + "\n"

    def _param_counts(self) -> tuple[int, int]:
        tensors = sum(self.locals[p.var.name].kind == "tensor" for p in self.func.params)
        return tensors, len(self.func.params) - tensors

    # -- declarations -----------------------------------------------------------------------

    def _declare_locals(self) -> None:
        """One C++ local per IR name, params first, then in order of first definition; a name
        keeps one kind (tensor or scalar type) for the whole function."""
        for param in self.func.params:
            self._define(param.var.name, param.var.type, param.var.span)
        for stmt in walk_stmts(self.func.body):
            if type(stmt) is AssignStmt:
                assert isinstance(stmt, AssignStmt)
                for target in stmt.targets:
                    self._define(target.name, target.type, expr_span(target, stmt.span))
            elif isinstance(stmt, ForStmt):
                self._define(stmt.var.name, stmt.var.type, expr_span(stmt.var, stmt.span))

    def _define(self, name: str, ty: Type, span: Span) -> None:
        if self._local_types.get(name) is ty:
            return
        self._local_types.setdefault(name, ty)
        local = _local_for(name, ty, span)
        known = self.locals.setdefault(name, local)
        if known != local:
            raise _unsupported(f"'{name}' bound to a {local.c_type} and a {known.c_type}", span)

    def _entry_prologue(self) -> None:
        """Bind the parameters and declare every other local; a local the body never reads is
        marked ``[[maybe_unused]]``, so the source also compiles under ``-Werror``."""
        params = {p.var.name for p in self.func.params}
        read = {e.name for e in walk_exprs(self.func.body) if isinstance(e, Var)}
        tensor_index = scalar_index = 0
        for param in self.func.params:
            local = self.locals[param.var.name]
            if local.kind == "tensor":
                init = f"&orch_args.tensor({tensor_index}).ref()"
                tensor_index += 1
            else:
                init = f"orch_args.scalar({scalar_index})"
                if local.c_type != "uint64_t":
                    init = f"pypto_build::scalar_value<{local.c_type}>({init})"
                scalar_index += 1
            self._declare(local, init, used=param.var.name in read)
        for name, local in self.locals.items():
            if name not in params:
                initial = "nullptr" if local.kind == "tensor" else "{}"
                self._declare(local, initial, used=name in read)
        for index in range(self.views):
            self.emit(f"ChipTensor view{index}_{{}};")
        for number in self.followed:
            self.emit(f"PTO2TaskId {_last(number)} = PTO2TaskId::invalid();")

    def _declare(self, local: _Local, init: str, *, used: bool) -> None:
        unused = "" if used else "[[maybe_unused]] "
        self.emit(f"{unused}{local.c_type} {local.name} = {init};")

    # -- statements -------------------------------------------------------------------------

    def _effect(self, expr: Expr, at: Span) -> None:
        self._value(expr, at)

    def _while(self, stmt: WhileStmt) -> None:
        self.emit(f"while ({_unparen(self._scalar(stmt.cond, stmt.span))}) {{")
        self._nested(stmt.body)
        self.emit("}")

    def _if(self, stmt: IfStmt) -> None:
        self.emit(f"if ({_unparen(self._scalar(stmt.cond, stmt.span))}) {{")
        self._nested(stmt.then_body)
        if stmt.else_body is not None and stmt.else_body.stmts:
            self.emit("} else {")
            self._nested(stmt.else_body)
        self.emit("}")

    def _for(self, stmt: ForStmt) -> None:
        """``for v in pl.range(start, stop, step)``: bounds evaluated once, as Python does; the
        loop variable is assigned at the top of each iteration (and keeps its last value)."""
        counter = f"loop{self.loops}_"
        self.loops += 1
        start = self._scalar(stmt.start, stmt.span)
        stop = self._scalar(stmt.stop, stmt.span)
        # A runtime stop or step is held in a const of a block around the loop.
        hoisted = not isinstance(stmt.stop, ConstInt) or not isinstance(stmt.step, ConstInt)
        with self._braced() if hoisted else nullcontext():
            if not isinstance(stmt.stop, ConstInt):
                self.emit(f"const int64_t {counter}stop = {stop};")
                stop = f"{counter}stop"
            condition, increment = self._for_step(stmt, counter, stop)
            self.emit(
                f"for (int64_t {counter} = {start}; {condition}; {counter} += {increment}) {{"
            )
            with self.indented():
                self.emit(f"{self.locals[stmt.var.name].name} = {counter};")
                self._block(stmt.body)
            self.emit("}")

    def _for_step(self, stmt: ForStmt, counter: str, stop: str) -> tuple[str, str]:
        """The loop condition and increment; a zero step is an error (Python's ValueError),
        at compile time for a constant step, else at run time before the loop."""
        if isinstance(stmt.step, ConstInt):
            step = stmt.step.value
            if step == 0:
                raise _unsupported("a zero pl.range() step", expr_span(stmt.step, stmt.span))
            return f"{counter} {'<' if step > 0 else '>'} {stop}", str(step)
        increment = f"{counter}step"
        self.emit(f"const int64_t {increment} = {self._scalar(stmt.step, stmt.span)};")
        self._fail_if(f"{increment} == 0", "pl.range() step must not be zero")
        return f"({increment} > 0 ? {counter} < {stop} : {counter} > {stop})", increment

    @contextmanager
    def _braced(self) -> Iterator[None]:
        """A C++ block: lines emitted inside the ``with`` are enclosed in braces, indented."""
        self.emit("{")
        with self.indented():
            yield
        self.emit("}")

    def _assign(self, stmt: AssignStmt) -> None:
        value = _known(self._value(stmt.value, stmt.span))
        if len(stmt.targets) == 1:
            values: tuple[_Value, ...] = (value,)
        elif isinstance(value, tuple) and len(value) == len(stmt.targets):
            values = value
        else:
            raise InternalError(f"{PHASE}: {len(stmt.targets)} targets for a non-tuple value")
        pairs: list[tuple[_Local, str]] = []
        for target, item in zip(stmt.targets, values, strict=True):
            local = self.locals[target.name]
            pairs.append((local, self._bound_text(local, _known(item), target, stmt.span)))
        moves = [(local, text) for local, text in pairs if text != local.name]
        if _reads_earlier_target(moves):
            # Simultaneous assignment: `a, b = self.k(b, a)` must not see the new `a`.
            with self._braced():
                temps = []
                for local, text in moves:
                    temp = f"result{self.temps}_"
                    self.temps += 1
                    self.emit(f"{local.c_type} const {temp} = {text};")
                    temps.append((local, temp))
                for local, temp in temps:
                    self.emit(f"{local.name} = {temp};")
        else:
            for local, text in moves:
                self.emit(f"{local.name} = {text};")

    def _bound_text(
        self, local: _Local, value: _Tensor | _Scalar | tuple[_Value, ...], target: Var, at: Span
    ) -> str:
        if isinstance(value, tuple):
            raise _unsupported("binding a tuple to one name", expr_span(target, at))
        if local.kind == "tensor":
            if not isinstance(value, _Tensor):
                raise InternalError(f"{PHASE}: tensor name '{local.name}' bound to a scalar")
            return value.pointer
        if not isinstance(value, _Scalar):
            raise InternalError(f"{PHASE}: scalar name '{local.name}' bound to a tensor")
        return _unparen(value.text)

    # -- values -----------------------------------------------------------------------------

    def _value(self, expr: Expr, at: Span) -> _Value:
        """Compile ``expr``, emitting the statements it needs first (tasks, views)."""
        if isinstance(expr, Var):
            value = self.names.get(expr.name)
            if value is None:
                raise InternalError(f"{PHASE}: unbound name '{expr.name}'")
            return value
        span = expr_span(expr, at)
        if isinstance(expr, Call) and isinstance(expr.op, GlobalVar):
            return self._kernel_call(expr, span)
        if isinstance(expr, Call):
            return self._tensor_op(expr, span)
        if isinstance(expr, TupleGetItem):
            inner = _known(self._value(expr.tuple, span))
            if not isinstance(inner, tuple) or not 0 <= expr.index < len(inner):
                raise InternalError(f"{PHASE}: tuple index {expr.index} of a non-tuple value")
            return inner[expr.index]
        if isinstance(expr, MakeTuple):
            raise _unsupported("a tuple value", span)
        return _Scalar(self._scalar(expr, span))

    def _tensor_arg(self, expr: Expr, at: Span) -> str:
        value = _known(self._value(expr, at))
        if not isinstance(value, _Tensor):
            raise InternalError(f"{PHASE}: expected a tensor operand")
        return value.pointer

    def _scalar(self, expr: Expr, at: Span) -> str:
        """A scalar expression (no side effects: it may be re-evaluated, as a loop condition)."""
        span = expr_span(expr, at)
        if isinstance(expr, ConstBool):
            return "true" if expr.value else "false"
        if isinstance(expr, ConstInt):
            return str(expr.value) if expr.value in _INT32_RANGE else f"INT64_C({expr.value})"
        if isinstance(expr, ConstFloat):
            return _float_literal(expr, span)
        if isinstance(expr, Var):
            local = self.locals.get(expr.name)
            if local is None or local.kind != "scalar":
                raise InternalError(f"{PHASE}: '{expr.name}' is not a scalar")
            return local.name
        if isinstance(expr, BinaryOp):
            lhs, rhs = self._scalar(expr.lhs, span), self._scalar(expr.rhs, span)
            if expr.op in _FLOOR:
                c_type = self._c_type(expr.type, span)
                return f"pypto_build::{_FLOOR[expr.op]}<{c_type}>({_unparen(lhs)}, {_unparen(rhs)})"
            if expr.op in _LOGICAL:
                return f"({lhs} {_LOGICAL[expr.op]} {rhs})"
            if expr.op in _BINARY:
                return f"({lhs} {expr.op} {rhs})"
            raise _unsupported(f"the operator '{expr.op}'", span)
        if isinstance(expr, UnaryOp):
            operand = self._scalar(expr.operand, span)
            if expr.op == "-":
                return f"(-{operand})"
            if expr.op == "not":
                return f"(!{operand})"
            raise _unsupported(f"the operator '{expr.op}'", span)
        if isinstance(expr, Call):
            raise _unsupported(f"'{expr.callee_name}' as a scalar", span)
        raise _unsupported(f"a {type(expr).__name__} as a scalar", span)

    def _c_type(self, ty: Type, span: Span) -> str:
        if isinstance(ty, ScalarType) and ty.dtype in _SCALAR_C_TYPES:
            return _SCALAR_C_TYPES[ty.dtype]
        raise _unsupported(f"a scalar of type {ty}", span)

    # -- tensor ops ---------------------------------------------------------------------------

    def _tensor_op(self, call: Call, span: Span) -> _Value:
        op = call.callee_name
        if op == Op.TENSOR_CREATE:
            shape = _shape(call.type, span)
            dtype = kwarg(call, Kwarg.DTYPE)
            if not isinstance(dtype, DataType) or dtype not in RUNTIME_DTYPES:
                raise _unsupported(f"{op} of dtype {dtype}", span)
            return self._view(
                f"pypto_build::create_tensor(DataType::{RUNTIME_DTYPES[dtype].name}, {shape})"
            )
        if op not in VIEW_OPS:
            raise _unsupported(f"'{op}'", span)
        source = _Tensor(self._tensor_arg(call.args[0], span))
        if op == Op.TENSOR_SLICE:
            offsets = call.args[2]
            if not isinstance(offsets, MakeTuple):
                raise _unsupported(f"{op} offsets that are not a list", span)
            offset_text = ", ".join(_unparen(self._scalar(item, span)) for item in offsets.items)
            shape = _shape(call.type, span)
            return self._view(f"pypto_build::slice({source.ref}, {shape}, {{{offset_text}}})")
        if op == Op.TENSOR_RESHAPE or kwarg(call, Kwarg.SHAPE) is not None:
            return self._view(f"pypto_build::reshape({source.ref}, {_shape(call.type, span)})")
        # set_validshape, or a view of the same shape: the valid region and layout are not
        # part of the runtime descriptor (orchestration.h), so it is the source itself.
        for extent in call.args[1:]:
            self._scalar(extent, span)
        return source

    def _view(self, init: str) -> _Tensor:
        storage = f"view{self.views}_"
        self.views += 1
        self.emit(f"{storage} = {init};")
        return _Tensor(f"&{storage}")

    # -- kernel calls ---------------------------------------------------------------------------

    def _kernel_call(self, call: Call, span: Span) -> _Value:
        callee = self.program.function(call.callee_name)
        if callee is None or call.callee_name not in self.func_ids:
            raise InternalError(f"{PHASE}: call of unknown kernel '{call.callee_name}'")
        # Every attr a task needs, read in one pass over the call's attrs (a few of them each).
        attrs = call_attrs(call)
        if isinstance(attrs.get(CallAttr.DEVICE), Expr):
            raise _unsupported("a device= dispatch", span)
        directions = call_directions(call, PHASE)
        names = self.names
        args: list[_Tensor | _Scalar] = []
        for arg, direction in zip(call.args, directions, strict=True):
            # Most operands are names: read here, without compiling them as values.
            named = names.get(arg.name) if type(arg) is Var else None
            value = _known(self._value(arg, span)) if named is None else named
            if isinstance(value, tuple) or (direction is None) != (type(value) is _Scalar):
                raise InternalError(
                    f"{PHASE}: argument of '{callee.name}' does not match {direction}"
                )
            args.append(value)
        given = attrs.get(CallAttr.TASK_ID)
        number = given if type(given) is int else self.tasks
        self._submit(call, attrs, callee, directions, args, number)
        results: list[_Value] = [
            args[position]
            if position is not None and type(args[position]) is _Tensor
            else _Unknown(callee.name)
            for position in returned_params(callee)
        ]
        result: _Value = results[0] if len(results) == 1 else tuple(results)
        if attrs.get(CallAttr.SUBMIT) is True:
            return (result, _Scalar(f"INT64_C({number})"))
        return result

    def _submit(
        self,
        call: Call,
        attrs: dict[str, AttrValue],
        callee: Function,
        directions: tuple[ArgDirection, ...],
        args: Sequence[_Tensor | _Scalar],
        number: int,
    ) -> None:
        task = f"task{self.tasks}_"
        self.tasks += 1
        deps = task_numbers(attrs.get(CallAttr.DEPS))
        explicit = task_numbers(attrs.get(CallAttr.EXPLICIT_DEPS))
        after = ""
        if deps:
            after = f", after task{'s' if len(deps) > 1 else ''} {', '.join(map(str, deps))}"
        if explicit:
            after += f" (named explicitly: {', '.join(map(str, explicit))})"
        # The task's block, its lines indented one level inside its braces: every kernel call
        # of a program emits one, so they are built here rather than through emit().
        outer = self.INDENT * self.depth
        self.depth += 1
        inner = outer + self.INDENT
        template = self._task_template(callee, directions, inner, call.span)
        lines = self.lines
        lines.append(f"{outer}{{")
        lines.append(f"{inner}// task {number}: {callee.name}{after}")
        if template.contiguous:
            refs = []
            for position in template.contiguous:
                arg = args[position]
                assert isinstance(arg, _Tensor)
                refs.append(arg.ref)
            lines.append(template.checks.format(*refs))
        operands = [
            arg.ref for arg in map(args.__getitem__, template.tensors) if type(arg) is _Tensor
        ]
        for position, c_type in template.scalars:
            scalar = args[position]
            assert isinstance(scalar, _Scalar)
            text = scalar.text
            operands.append(text if c_type is None else _bits(c_type, text))
        # One string of several lines: the source is its lines joined by newlines.
        lines.append(template.arguments.format(*operands, task=task))
        for line in self._launch_spec(attrs, call.span):
            lines.append(f"{inner}{task}.launch_spec.{line};")
        if explicit:
            candidates = ", ".join(_last(dep) for dep in explicit)
            lines.append(
                f"{inner}pypto_build::TaskDeps<{len(explicit)}> {task}deps_{{{candidates}}};"
            )
            lines.append(f"{inner}{task}.set_dependencies({task}deps_.ids, {task}deps_.count);")
        submit = f"{template.submit}, {task})"
        if number in self.followed:
            submit = f"{_last(number)} = {submit}.task_id()"
        lines.append(f"{inner}{submit};")
        lines.append(f"{outer}}}")
        self.depth -= 1

    def _task_template(
        self, callee: Function, directions: tuple[ArgDirection, ...], inner: str, span: Span
    ) -> _TaskTemplate:
        """The :class:`_TaskTemplate` of a task of ``callee`` at indentation ``inner``."""
        key = (callee.name, directions, inner)
        found = self._templates.get(key)
        if found is None:
            found = self._templates[key] = self._new_template(callee, directions, inner, span)
        return found

    def _new_template(
        self, callee: Function, directions: tuple[ArgDirection, ...], inner: str, span: Span
    ) -> _TaskTemplate:
        # An argument is a tensor exactly when it has a direction (_kernel_call checks it).
        added = [(index, d) for index, d in enumerate(directions) if d is not None]
        tensors = tuple(index for index, _ in added)
        scalars = tuple(
            (index, self._bits_type(callee.params[index].var.type, span))
            for index, direction in enumerate(directions)
            if direction is None
        )
        contiguous: tuple[int, ...] = tensors if requires_contiguous(callee) else ()
        checks = [
            _fail_lines(
                inner,
                f"!pypto_build::is_contiguous({_OPERAND})",
                f"{callee.name}: operand {callee.params[index].var.name} is not contiguous",
            )
            for index in contiguous
        ]
        # Each check's descriptor is a field of the one string; the rest is text as it is.
        escaped = "\n".join(line for lines in checks for line in lines)
        escaped = escaped.replace("{", "{{").replace("}", "}}").replace(_OPERAND, "{}")
        text = [f"{inner}CoreTaskArgs {{task}};"]
        text += [f"{inner}{{task}}.{_ADD_TENSOR[direction]}({{}});" for _, direction in added]
        text += [f"{inner}{{task}}.add_scalar({{}});"] * len(scalars)
        submit = _submit(self.func_ids[callee.name])
        return _TaskTemplate(tensors, scalars, contiguous, escaped, "\n".join(text), submit)

    def _fail_if(self, condition: str, message: str) -> None:
        """When ``condition`` holds at run time, latch ``PTO2_ERROR_INVALID_ARGS`` with
        ``message`` and leave the entry, so nothing after it is submitted."""
        self.lines += _fail_lines(self.INDENT * self.depth, condition, message)

    def _bits_type(self, param_type: Type, span: Span) -> str | None:
        """The C++ type a scalar parameter's value is passed as the bits of; None for a
        CommCtx, whose ``uint64_t`` address is passed as it is."""
        if isinstance(param_type, CommCtxType):
            return None
        return self._c_type(param_type, span)

    def _launch_spec(self, attrs: dict[str, AttrValue], span: Span) -> Iterator[str]:
        core_num = attrs.get(CallAttr.CORE_NUM)
        if core_num is not None:
            yield f"{_LAUNCH_METHOD}({self._attr_scalar(core_num, span)})"
        sync_start = attrs.get(CallAttr.SYNC_START)
        if sync_start is None:
            return
        if isinstance(sync_start, ConstBool | bool):
            if sync_start is True or (isinstance(sync_start, ConstBool) and sync_start.value):
                yield "set_require_sync_start(true)"
        else:
            yield f"set_require_sync_start({self._attr_scalar(sync_start, span)})"

    def _attr_scalar(self, value: AttrValue, span: Span) -> str:
        if isinstance(value, bool) or not isinstance(value, _LAUNCH_VALUES):
            raise _unsupported(f"the launch attr {value!r}", span)
        if isinstance(value, int):
            return str(value)
        return _unparen(self._scalar(value, span))


#: What a launch attr may hold besides a bool (a tuple: a union is made at every test).
_LAUNCH_VALUES = (int, Expr)


def _fail_lines(indent: str, condition: str, message: str) -> tuple[str, ...]:
    """The lines of :meth:`_Codegen._fail_if` at ``indent``."""
    return (
        f"{indent}if ({condition}) {{",
        f'{indent}  rt_report_fatal(PTO2_ERROR_INVALID_ARGS, "{message}");',
        f"{indent}  return;",
        f"{indent}}}",
    )


#: Where a contiguity check of a task template names its operand: NUL characters, which no
#: name or message of a generated source holds.
_OPERAND = "\0operand\0"


def _bits(c_type: str, text: str) -> str:
    """The ``uint64_t`` bits of the scalar ``text`` of type ``c_type``, as a task passes it."""
    return f"pypto_build::scalar_bits<{c_type}>({_unparen(text)})"


def _last(number: int) -> str:
    """The local holding the id of task ``number``'s last submitted instance."""
    return f"task{number}_last_"


def _submit(func_ids: dict[CoreType, int]) -> str:
    """The submit call of a task, up to its argument: an AIV or AIC task by its kernel's
    func_id, a MIX cluster by its AIC kernel and its AIV kernel on both sub-blocks."""
    aic, aiv = func_ids.get(CoreType.AIC), func_ids.get(CoreType.AIV)
    if aic is not None and aiv is not None:
        return f"rt_submit_task(MixedKernels{{{aic}, {aiv}, {aiv}}}"
    if aic is not None:
        return f"rt_submit_aic_task({aic}"
    return f"rt_submit_aiv_task({aiv}"


_ADD_TENSOR = {
    ParamDirection.In: "add_input",
    ParamDirection.Out: "add_output",
    ParamDirection.InOut: "add_inout",
}


def _unparen(text: str) -> str:
    """``text`` without one pair of parentheses enclosing all of it (for an if/while condition)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and index < len(text) - 1:
            return text
    return text[1:-1]


def _reads_earlier_target(moves: Sequence[tuple[_Local, str]]) -> bool:
    """Whether a later assignment of a tuple assignment reads a name an earlier one writes."""
    written: set[str] = set()
    for local, text in moves:
        if written and written & set(_IDENTIFIER.findall(text)):
            return True
        written.add(local.name)
    return False


def _shape(ty: Type, span: Span) -> str:
    if not isinstance(ty, TensorType):
        raise InternalError(f"{PHASE}: expected a tensor type, got {ty}")
    for dim in ty.shape:
        if not 0 <= dim <= DESCRIPTOR_DIM_MAX:
            raise _unsupported(f"dimension {dim}", span)
    return "{" + ", ".join(str(dim) for dim in ty.shape) + "}"


def _float_literal(expr: ConstFloat, span: Span) -> str:
    text = repr(float(expr.value))
    if text in ("inf", "-inf", "nan"):
        raise _unsupported(f"the constant {text}", span)
    is_fp32 = isinstance(expr.type, ScalarType) and expr.type.dtype is DataType.FP32
    return f"{text}f" if is_fp32 else text
