"""Expressions of a function body -> IR expressions.

Names resolve like Python: the function's own bindings first (carrying the type of the reaching
definition), then module constants (folded to ``ConstInt``), then imports (DSL names). Integer
arithmetic over constants folds, so ``core_num=NR * 2`` is a compile-time ``ConstInt`` that the
collective passes can check. Scalar arithmetic is typed ``INDEX`` unless an operand has another
scalar type; comparisons and ``and``/``or``/``not`` are ``BOOL``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import NoReturn

from pypto_build.lowering.frontend.calls import convert_call
from pypto_build.lowering.frontend.constants import (
    INT_OPERATORS,
    FoldError,
    apply_int_op,
    check_int64,
)
from pypto_build.lowering.frontend.context import FunctionContext
from pypto_build.lowering.frontend.imports import dotted_parts
from pypto_build.lowering.frontend.literals import literal_of
from pypto_build.lowering.frontend.scope import Scope
from pypto_build.lowering.frontend.source import Source, text
from pypto_build.lowering.frontend.subscripts import tensor_subscript
from pypto_build.lowering.ir import (
    BOOL,
    INDEX,
    AttrValue,
    BinaryOp,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    MakeTuple,
    ScalarType,
    TensorType,
    TupleGetItem,
    TupleType,
    Type,
    UnaryOp,
    Var,
)
from pypto_build.lowering.optable import resolve_dsl_name
from pypto_build.lowering.printer import format_type

_COMPARISONS: Mapping[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}

_UNARY_SYMBOLS: Mapping[type[ast.unaryop], str] = {
    ast.USub: "-",
    ast.UAdd: "+",
    ast.Not: "not",
    ast.Invert: "~",
}

#: Constructs with no IR counterpart, named as the diagnostic names them.
_UNSUPPORTED: Mapping[type[ast.expr], str] = {
    ast.Lambda: "lambda",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.IfExp: "conditional expression",
    ast.Dict: "dict literal",
    ast.Set: "set literal",
    ast.JoinedStr: "f-string",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.NamedExpr: "assignment expression ':='",
    ast.Starred: "starred expression",
    ast.Slice: "slice",
}


class ExprConverter:
    """Converts the expressions of one function body against the current ``scope``."""

    def __init__(self, ctx: FunctionContext, scope: Scope) -> None:
        self.ctx = ctx
        self.scope = scope
        #: The file, which every node's span and diagnostic asks for.
        self.source: Source = ctx.module.source

    # --- entry points ------------------------------------------------------------------------

    def expr(self, node: ast.expr) -> Expr:
        """``node`` as an IR expression; a literal that is not a value is a diagnostic."""
        value = self.value(node)
        if not isinstance(value, Expr):
            hint = ""
            if literal_of(self.dsl_path(node) or ""):
                hint = "; pass it as an op's keyword argument (dtype=, layout=)"
            self.source.error(node, f"'{text(node)}' is not a value here{hint}")
        return value

    def value(self, node: ast.expr) -> AttrValue:
        """An operand or keyword value: an expression, or a literal (string, ``None``, data
        type, layout, or a parenthesised tuple of literals as the printer writes attrs)."""
        if type(node) is ast.Name:
            name = node.id
            scope = self.scope
            var = scope.bound.get(name)
            if var is not None:
                # A local (most operands): no DSL path, so no literal.
                if name in scope.maybe_unbound:
                    return self._name(node)  # its diagnostic
                return Var(name, var.type, self.source.span(node))
        if isinstance(node, ast.Constant):
            return self._constant(node)
        if isinstance(node, ast.Tuple):
            items = tuple(self.value(item) for item in node.elts)
            exprs = tuple(item for item in items if isinstance(item, Expr))
            if len(exprs) == len(items):
                return MakeTuple(exprs, self.source.span(node))
            return items
        literal = literal_of(self.dsl_path(node) or "")
        if literal is not None:
            return literal
        return self._expr(node)

    def scalar(self, node: ast.expr, what: str) -> Expr:
        """An expression that must have a scalar type (a condition, a loop bound)."""
        expr = self.expr(node)
        if not isinstance(expr.type, ScalarType):
            self.source.error(node, f"{what} must be a scalar, got {format_type(expr.type)}")
        return expr

    def dsl_path(self, node: ast.expr) -> str | None:
        """The canonical DSL path of ``node`` unless its root name is a local binding."""
        parts = dotted_parts(node)
        if parts is None or parts[0] in self.scope.bound:
            return None
        return self.ctx.module.imports.dsl_path_of(parts)

    def is_receiver(self, node: ast.expr) -> bool:
        """Whether ``node`` is the stripped ``self`` parameter."""
        return isinstance(node, ast.Name) and node.id == self.ctx.receiver

    # --- node kinds --------------------------------------------------------------------------

    def _expr(self, node: ast.expr) -> Expr:
        # Names, calls and attributes are most of a program: each kind makes its own span.
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Call):
            return convert_call(self, node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.List):
            span = self.source.span(node)
            return MakeTuple(tuple(self.expr(item) for item in node.elts), span)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        construct = _UNSUPPORTED.get(type(node), type(node).__name__)
        self.source.error(node, f"unsupported expression: '{construct}'")

    def _constant(self, node: ast.Constant) -> AttrValue:
        span = self.source.span(node)
        value = node.value
        if isinstance(value, bool):
            return ConstBool(value, span=span)
        if isinstance(value, int):
            return ConstInt(self._int64(node, value), span=span)
        if isinstance(value, float):
            return ConstFloat(value, span=span)
        if isinstance(value, str) or value is None:
            return value
        self.source.error(node, f"unsupported literal '{text(node)}'")

    def _int64(self, node: ast.expr, value: int) -> int:
        try:
            return check_int64(value)
        except FoldError as exc:
            self.source.error(node, str(exc))

    def _name(self, node: ast.Name) -> Expr:
        name = node.id
        where = self.scope.maybe_unbound.get(name)
        if where is not None:
            self.source.error(
                node, f"name '{name}' may be undefined here: it is assigned only {where}"
            )
        var = self.scope.bound.get(name)
        if var is not None:
            return Var(name, var.type, self.source.span(node))
        if name == self.ctx.receiver:
            self.source.error(node, f"'{name}' can only be used to call a function: {name}.f(...)")
        constants = self.ctx.module.constants
        if name in constants.values:
            return ConstInt(constants.values[name], span=self.source.span(node))
        if name in constants.unfoldable:
            self.source.error(node, f"module constant '{name}' is not a compile-time integer")
        if self.ctx.module.imports.is_bound(name):
            self.source.error(node, f"'{name}' is an imported name, not a value")
        self.source.error(node, f"name '{name}' is not defined")

    def _attribute(self, node: ast.Attribute) -> NoReturn:
        """Every attribute that reaches here is an error; say which kind."""
        parts = dotted_parts(node)
        if parts is not None and parts[0] in self.scope.bound:
            self.source.error(node, f"attribute access on a value is not supported: '{text(node)}'")
        if self.is_receiver(node.value):
            self.source.error(node, f"'{text(node)}' must be called: {text(node)}(...)")
        path = self.dsl_path(node)
        if path is None:
            self.source.error(node, f"'{text(node)}' is not supported in a PyPTO program")
        if resolve_dsl_name(path) is not None:
            self.source.error(node, f"'{path}' must be called: {path}(...)")
        self.source.error(node, f"unknown name '{path}'")

    def _binop(self, node: ast.BinOp) -> Expr:
        op = INT_OPERATORS.get(type(node.op))
        if op is None:
            symbol = _operator_text(node)
            hint = "; use '//' for integer division" if symbol == "/" else ""
            self.source.error(node, f"operator '{symbol}' is not supported{hint}")
        lhs, rhs = self.expr(node.left), self.expr(node.right)
        span = self.source.span(node)
        if isinstance(lhs, ConstInt) and isinstance(rhs, ConstInt):
            try:
                return ConstInt(apply_int_op(op, lhs.value, rhs.value), span=span)
            except FoldError as exc:
                self.source.error(node, str(exc))
        if op == "**":
            self.source.error(node, "operator '**' needs compile-time integer operands")
        self._require_scalars(op, ((node.left, lhs), (node.right, rhs)))
        return BinaryOp(op, lhs, rhs, _arithmetic_type(lhs.type, rhs.type), span)

    def _boolop(self, node: ast.BoolOp) -> Expr:
        op = "and" if isinstance(node.op, ast.And) else "or"
        operands = [(item, self.expr(item)) for item in node.values]
        self._require_scalars(op, operands)
        result = operands[0][1]
        for _, operand in operands[1:]:
            result = BinaryOp(op, result, operand, BOOL, self.source.span(node))
        return result

    def _compare(self, node: ast.Compare) -> Expr:
        if len(node.ops) != 1:
            self.source.error(node, "chained comparisons are not supported; use 'and'")
        op = _COMPARISONS.get(type(node.ops[0]))
        if op is None:
            self.source.error(node, f"operator '{_operator_text(node)}' is not supported")
        lhs, rhs = self.expr(node.left), self.expr(node.comparators[0])
        self._require_scalars(op, ((node.left, lhs), (node.comparators[0], rhs)))
        return BinaryOp(op, lhs, rhs, BOOL, self.source.span(node))

    def _unary(self, node: ast.UnaryOp) -> Expr:
        span = self.source.span(node)
        op = _UNARY_SYMBOLS[type(node.op)]
        if op == "~":
            self.source.error(node, "operator '~' is not supported")
        operand = self.expr(node.operand)
        self._require_scalars(op, ((node.operand, operand),))
        if op == "+":
            return operand
        if op == "not":
            return UnaryOp("not", operand, BOOL, span)
        if isinstance(operand, ConstInt):
            return ConstInt(self._int64(node, -operand.value), span=span)
        if isinstance(operand, ConstFloat):
            return ConstFloat(-operand.value, span=span)
        return UnaryOp("-", operand, operand.type, span)

    def _subscript(self, node: ast.Subscript) -> Expr:
        base = self.expr(node.value)
        if isinstance(base.type, TensorType):
            return tensor_subscript(self, node, base)
        if not isinstance(base.type, TupleType):
            self.source.error(
                node, f"a value of type {format_type(base.type)} is not subscriptable"
            )
        items = base.type.items
        index = self.ctx.module.fold(node.slice)
        if not -len(items) <= index < len(items):
            self.source.error(
                node.slice, f"tuple index {index} out of range for a tuple of {len(items)}"
            )
        index %= len(items)
        return TupleGetItem(base, index, items[index], self.source.span(node))

    def _require_scalars(self, op: str, operands: Sequence[tuple[ast.expr, Expr]]) -> None:
        for node, operand in operands:
            if not isinstance(operand.type, ScalarType):
                self.source.error(
                    node, f"operator '{op}' needs scalar operands, got {format_type(operand.type)}"
                )


def _arithmetic_type(lhs: Type, rhs: Type) -> Type:
    for ty in (lhs, rhs):
        if isinstance(ty, ScalarType) and ty != INDEX:
            return ty
    return INDEX


_OPERATOR_SYMBOLS: Mapping[type[ast.AST], str] = {
    ast.Div: "/",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


def _operator_text(node: ast.BinOp | ast.Compare) -> str:
    operator = node.op if isinstance(node, ast.BinOp) else node.ops[0]
    return _OPERATOR_SYMBOLS.get(type(operator), type(operator).__name__)
