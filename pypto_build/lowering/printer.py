"""Print IR programs back as DSL source.

The output is a Python module in the upstream spelling (``pl`` / ``pld``) that the front end
parses back to a structurally equal program, so ``lower --after <pass>`` dumps, test goldens and
hand-written programs are one language. It is deterministic: no ids, no addresses, attrs in
their stored order.

Some constructs have a spelling the front end does not parse, because only passes produce them:
a materialized ``CommDomainScopeStmt`` prints as
``with pld.comm_domain("name", buffers=[...], devices=[...]):`` (an unnamed one without buffers,
as the front end builds it, in the user's ``with pld.comm_domain(devices=[...]):``), a call of an
internal op as ``builtin.tensor.all_to_all_v(..., attrs={...})`` with its call attrs, a
``CommCtxType`` parameter as ``pld.CommCtx`` and a ``WindowBufferType`` as
``pld.WindowBuffer[nbytes]``. A tensor type with an explicit stride or valid shape prints its
layout as a third subscript element ``pl.TensorView(layout=..., stride=[...], valid_shape=[...])``.

Literal tuple attribute values print as Python tuples ``(a, b)`` while :class:`MakeTuple`
expressions print as lists ``[a, b]``, so the two stay distinguishable in the text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import (
    AssignStmt,
    Attrs,
    AttrValue,
    BinaryOp,
    Call,
    CommCtxType,
    CommDomainScopeStmt,
    ConstBool,
    ConstFloat,
    ConstInt,
    DataType,
    DistributedTensorType,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    GlobalVar,
    IfStmt,
    Layout,
    MakeTuple,
    Param,
    ParamDirection,
    Program,
    ReduceOp,
    ReturnStmt,
    ScalarType,
    SeqStmts,
    Stmt,
    TensorType,
    TupleGetItem,
    TupleType,
    Type,
    UnaryOp,
    Var,
    WhileStmt,
    WindowBufferType,
)
from pypto_build.lowering.ir.names import CallAttr, FunctionAttr, is_submit
from pypto_build.lowering.optable import dsl_spelling, spelled_operands

_HEADER = "import pypto.language as pl\nimport pypto.language.distributed as pld\n"
_INDENT = "    "

#: Function attrs written in the ``@pl.function(...)`` decorator rather than ``pl.func_attr``.
_DECORATOR_ATTRS = (FunctionAttr.EXTERNAL_SOURCE,)

# Python operator precedence, lowest binding first; operands that bind more loosely than their
# context get parentheses, nothing else does.
_OR, _AND, _NOT, _COMPARE, _ADD, _MUL, _UNARY, _ATOM = range(8)
_BINARY_PRECEDENCE = {
    "or": _OR,
    "and": _AND,
    "<": _COMPARE,
    "<=": _COMPARE,
    ">": _COMPARE,
    ">=": _COMPARE,
    "==": _COMPARE,
    "!=": _COMPARE,
    "+": _ADD,
    "-": _ADD,
    "*": _MUL,
    "//": _MUL,
    "%": _MUL,
}
_UNARY_PRECEDENCE = {"-": _UNARY, "not": _NOT}
_UNARY_SPELLING = {"-": "-", "not": "not "}


def print_programs(programs: Sequence[Program]) -> str:
    """The DSL module holding ``programs`` in order (the imports once, then one class each)."""
    blocks = [_HEADER, *(_ProgramPrinter().program(p) for p in programs)]
    return "\n\n".join(blocks)


def format_type(ty: Type) -> str:
    """``ty`` in annotation spelling (``pl.Tensor[[8, 64], pl.FP32]``), also for diagnostics."""
    return _TypePrinter().type(ty)


def format_expr(expr: Expr) -> str:
    """``expr`` in DSL spelling, also for diagnostics."""
    return _ExprPrinter().expr(expr)


def quote(text: str) -> str:
    """A double-quoted Python string literal for ``text``."""
    return '"' + "".join(_escape(char) for char in text) + '"'


def _escape(char: str) -> str:
    if char in '\\"':
        return "\\" + char
    if char.isprintable():
        return char
    return repr(char)[1:-1]


# --- dispatch and types ----------------------------------------------------------------------


def _visitor(printer: object, node: object, kind: str) -> Any:
    """The ``_<ClassName>`` method of ``printer`` for ``node``; a node kind without one is a bug."""
    method = getattr(printer, "_" + type(node).__name__, None)
    if method is None:
        raise InternalError(f"printer: no DSL spelling for {kind} {type(node).__name__}")
    return method


def _dtype(dtype: DataType) -> str:
    return f"pl.{dtype.name}"


def _int_list(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


class _TypePrinter:
    """Prints types in annotation spelling, one method per type class."""

    def type(self, ty: Type) -> str:
        text: str = _visitor(self, ty, "type")(ty)
        return text

    def _TensorType(self, ty: TensorType) -> str:
        return "pl.Tensor" + self._subscript(ty)

    def _DistributedTensorType(self, ty: DistributedTensorType) -> str:
        # The window binding is not part of the annotation: it comes from ``pld.window``.
        return "pld.DistributedTensor" + self._subscript(ty)

    def _ScalarType(self, ty: ScalarType) -> str:
        return f"pl.Scalar[{_dtype(ty.dtype)}]"

    def _TupleType(self, ty: TupleType) -> str:
        return "tuple[" + ", ".join(self.type(item) for item in ty.items) + "]"

    def _WindowBufferType(self, ty: WindowBufferType) -> str:
        return f"pld.WindowBuffer[{ty.nbytes}]"

    def _CommCtxType(self, ty: CommCtxType) -> str:
        return "pld.CommCtx"

    def _subscript(self, ty: TensorType) -> str:
        return f"[{_int_list(ty.shape)}, {_dtype(ty.dtype)}{self._layout_suffix(ty)}]"

    def _layout_suffix(self, ty: TensorType) -> str:
        """The optional third subscript element: nothing, ``pl.DN``, or a ``pl.TensorView``."""
        if ty.stride is None and ty.valid_shape is None:
            return "" if ty.layout is Layout.ND else f", pl.{ty.layout.value}"
        parts = [f"layout=pl.{ty.layout.value}"]
        if ty.stride is not None:
            parts.append(f"stride={_int_list(ty.stride)}")
        if ty.valid_shape is not None:
            parts.append(f"valid_shape={_int_list(ty.valid_shape)}")
        return ", pl.TensorView(" + ", ".join(parts) + ")"


# --- expressions -----------------------------------------------------------------------------


def _float_text(value: float) -> str:
    if math.isfinite(value):
        return repr(value)
    return f'float("{value!r}")'


def _precedence(expr: Expr) -> int:
    if isinstance(expr, BinaryOp | UnaryOp):
        table = _BINARY_PRECEDENCE if isinstance(expr, BinaryOp) else _UNARY_PRECEDENCE
        if expr.op not in table:
            raise InternalError(f"printer: unknown operator {expr.op!r}")
        return table[expr.op]
    if isinstance(expr, ConstInt | ConstFloat) and expr.value < 0:
        return _UNARY
    return _ATOM


class _ExprPrinter:
    """Prints expressions, one method per node class (``_Var``, ``_Call``, ...)."""

    def expr(self, expr: Expr) -> str:
        text: str = _visitor(self, expr, "expression")(expr)
        return text

    def operand(self, expr: Expr, min_precedence: int) -> str:
        """``expr`` in a context accepting operands that bind at ``min_precedence`` or tighter."""
        text = self.expr(expr)
        return text if _precedence(expr) >= min_precedence else f"({text})"

    def attr_value(self, value: AttrValue) -> str:
        if isinstance(value, Expr):
            return self.expr(value)
        if isinstance(value, tuple):
            items = [self.attr_value(item) for item in value]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return _literal(value)

    def attr_dict(self, attrs: Attrs) -> str:
        """``{"key": value, ...}``: function attrs, and the attrs of an op call."""
        entries = [f"{quote(key)}: {self.attr_value(value)}" for key, value in attrs]
        return "{" + ", ".join(entries) + "}"

    def arguments(self, args: Sequence[Expr], keywords: Attrs) -> str:
        parts = [self.expr(arg) for arg in args]
        parts += [f"{key}={self.attr_value(value)}" for key, value in keywords]
        return ", ".join(parts)

    def _Var(self, expr: Var) -> str:
        return expr.name

    def _ConstInt(self, expr: ConstInt) -> str:
        return str(expr.value)

    def _ConstFloat(self, expr: ConstFloat) -> str:
        return _float_text(expr.value)

    def _ConstBool(self, expr: ConstBool) -> str:
        return str(expr.value)

    def _BinaryOp(self, expr: BinaryOp) -> str:
        own = _precedence(expr)
        # Left-associative operators need parentheses only on a right operand of equal
        # precedence; comparisons chain in Python, so any nested comparison needs them.
        left = own + 1 if own == _COMPARE else own
        lhs = self.operand(expr.lhs, left)
        rhs = self.operand(expr.rhs, own + 1)
        return f"{lhs} {expr.op} {rhs}"

    def _UnaryOp(self, expr: UnaryOp) -> str:
        operand = self.operand(expr.operand, _precedence(expr))
        return _UNARY_SPELLING[expr.op] + operand

    def _MakeTuple(self, expr: MakeTuple) -> str:
        return "[" + ", ".join(self.expr(item) for item in expr.items) + "]"

    def _TupleGetItem(self, expr: TupleGetItem) -> str:
        return f"{self.operand(expr.tuple, _ATOM)}[{expr.index}]"

    def _Call(self, expr: Call) -> str:
        if isinstance(expr.op, GlobalVar):
            return self._self_call(expr, expr.op)
        arguments = self.arguments(*spelled_operands(expr))
        if expr.attrs:
            # Only passes put attrs on an op call (the HOST rail's per-device builtin dispatch).
            arguments += f", attrs={self.attr_dict(expr.attrs)}"
        return f"{dsl_spelling(expr.op)}({arguments})"

    def _self_call(self, call: Call, callee: GlobalVar) -> str:
        """``self.f(args, attrs)``, or ``pl.submit(self.f, args, attrs)`` for a submitted call."""
        if is_submit(call):
            attrs = tuple((key, value) for key, value in call.attrs if key != CallAttr.SUBMIT)
            arguments = self.arguments(call.args, call.kwargs + attrs)
            return f"pl.submit(self.{callee.name}" + (f", {arguments})" if arguments else ")")
        return f"self.{callee.name}({self.arguments(call.args, call.kwargs + call.attrs)})"


def _literal(value: AttrValue) -> str:
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, DataType):
        return _dtype(value)
    if isinstance(value, Layout):
        return f"pl.{value.value}"
    if isinstance(value, ParamDirection):
        return quote(value.value)
    if isinstance(value, ReduceOp):
        return f"pld.ReduceOp.{value.name}"
    if isinstance(value, float):
        return _float_text(value)
    # bool, int and None print as Python does.
    return repr(value)


# --- statements, functions, programs ---------------------------------------------------------


class _ProgramPrinter:
    """Accumulates the indented lines of one program; one method per statement class."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._depth = 0
        self._exprs = _ExprPrinter()

    def program(self, program: Program) -> str:
        self._emit("@pl.program")
        self._emit(f"class {program.name}:")
        self._depth += 1
        for index, func in enumerate(program.functions):
            if index:
                self._lines.append("")
            self._function(func)
        if not program.functions:
            self._emit("pass")
        self._depth -= 1
        return "\n".join(self._lines) + "\n"

    def _emit(self, line: str) -> None:
        self._lines.append(_INDENT * self._depth + line)

    def _function(self, func: Function) -> None:
        self._emit(self._decorator(func))
        self._emit(self._signature(func))
        self._depth += 1
        body_attrs = tuple((k, v) for k, v in func.attrs if k not in _DECORATOR_ATTRS)
        if body_attrs:
            self._emit(f"pl.func_attr({self._exprs.attr_dict(body_attrs)})")
        elif not func.body.stmts:
            self._emit("...")
        self._stmts(func.body)
        self._depth -= 1

    def _decorator(self, func: Function) -> str:
        parts = [
            f"type=pl.FunctionType.{func.func_type.value}",
            f"level=pl.Level.{func.level.value}",
        ]
        parts += [
            f"{key}={self._exprs.attr_value(value)}"
            for key, value in func.attrs
            if key in _DECORATOR_ATTRS
        ]
        return "@pl.function(" + ", ".join(parts) + ")"

    def _signature(self, func: Function) -> str:
        params = ", ".join(["self", *(self._param(p) for p in func.params)])
        returns = ""
        if len(func.return_types) == 1:
            returns = " -> " + format_type(func.return_types[0])
        elif func.return_types:
            returns = " -> " + format_type(TupleType(func.return_types))
        return f"def {func.name}({params}){returns}:"

    def _param(self, param: Param) -> str:
        annotation = format_type(param.var.type)
        if param.direction is not ParamDirection.In:
            annotation = f"pl.{param.direction.value}[{annotation}]"
        return f"{param.var.name}: {annotation}"

    def _block(self, header: str, body: SeqStmts) -> None:
        self._emit(header)
        self._depth += 1
        if body.stmts:
            self._stmts(body)
        else:
            self._emit("pass")
        self._depth -= 1

    def _stmts(self, body: SeqStmts) -> None:
        for stmt in body.stmts:
            self._stmt(stmt)

    def _stmt(self, stmt: Stmt) -> None:
        _visitor(self, stmt, "statement")(stmt)

    def _SeqStmts(self, stmt: SeqStmts) -> None:
        self._stmts(stmt)

    def _AssignStmt(self, stmt: AssignStmt) -> None:
        targets = ", ".join(target.name for target in stmt.targets)
        self._emit(f"{targets} = {self._exprs.expr(stmt.value)}")

    def _EvalStmt(self, stmt: EvalStmt) -> None:
        self._emit(self._exprs.expr(stmt.expr))

    def _ReturnStmt(self, stmt: ReturnStmt) -> None:
        values = ", ".join(self._exprs.expr(value) for value in stmt.values)
        self._emit(f"return {values}" if values else "return")

    def _IfStmt(self, stmt: IfStmt, keyword: str = "if") -> None:
        self._block(f"{keyword} {self._exprs.expr(stmt.cond)}:", stmt.then_body)
        orelse = stmt.else_body
        if orelse is None:
            return
        if len(orelse.stmts) == 1 and isinstance(orelse.stmts[0], IfStmt):
            self._IfStmt(orelse.stmts[0], "elif")
        else:
            self._block("else:", orelse)

    def _ForStmt(self, stmt: ForStmt) -> None:
        bounds: list[Expr] = [stmt.start, stmt.stop, stmt.step]
        if stmt.step == ConstInt(1):
            bounds = [stmt.stop] if stmt.start == ConstInt(0) else [stmt.start, stmt.stop]
        header = f"for {stmt.var.name} in pl.range({self._exprs.arguments(bounds, ())}):"
        self._block(header, stmt.body)

    def _WhileStmt(self, stmt: WhileStmt) -> None:
        self._block(f"while {self._exprs.expr(stmt.cond)}:", stmt.body)

    def _CommDomainScopeStmt(self, stmt: CommDomainScopeStmt) -> None:
        parts: list[str] = []
        if stmt.name or stmt.buffers:
            parts = [quote(stmt.name), "buffers=[" + ", ".join(map(quote, stmt.buffers)) + "]"]
        if stmt.devices is not None:
            parts.append(f"devices={_int_list(stmt.devices)}")
        self._block(f"with pld.comm_domain({', '.join(parts)}):", stmt.body)
