"""Statements of a function body -> IR statements.

The supported statements are the ones the passes reason about: assignment (one name, or a tuple
of names unpacking a tuple-typed value), expression statements (calls), ``return``,
``if``/``else``, ``for ... in pl.range(...)``, ``while``, ``pass`` and, in a HOST orchestrator,
``with pld.comm_domain(...)``. Anything else is reported by name, because silently skipping a
statement would build a different program than the one the user wrote.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from pypto_build.lowering.diagnostics import SYNTHETIC, Span
from pypto_build.lowering.frontend.annotations import value_type
from pypto_build.lowering.frontend.comm_domain import (
    COMM_DOMAIN,
    comm_domain_call,
    comm_domain_devices,
)
from pypto_build.lowering.frontend.context import FunctionContext
from pypto_build.lowering.frontend.exprs import ExprConverter
from pypto_build.lowering.frontend.scope import Scope, join
from pypto_build.lowering.frontend.source import Source, text
from pypto_build.lowering.frontend.typecheck import compatible
from pypto_build.lowering.ir import (
    INDEX,
    AssignStmt,
    Call,
    CommDomainScopeStmt,
    ConstInt,
    EvalStmt,
    Expr,
    ForStmt,
    IfStmt,
    ReturnStmt,
    SeqStmts,
    Stmt,
    TupleType,
    Var,
    WhileStmt,
)
from pypto_build.lowering.printer import format_type

_UNSUPPORTED: Mapping[type[ast.stmt], str] = {
    ast.AsyncWith: "async with",
    ast.Try: "try",
    ast.TryStar: "try",
    ast.Delete: "del",
    ast.AugAssign: "augmented assignment",
    ast.Break: "break",
    ast.Continue: "continue",
    ast.FunctionDef: "nested def",
    ast.AsyncFunctionDef: "nested async def",
    ast.ClassDef: "nested class",
    ast.Global: "global",
    ast.Nonlocal: "nonlocal",
    ast.Assert: "assert",
    ast.Raise: "raise",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.Match: "match",
    ast.AsyncFor: "async for",
}

_TARGET_KINDS: Mapping[type[ast.expr], str] = {
    ast.Attribute: "attribute assignment",
    ast.Subscript: "subscript assignment",
    ast.Starred: "starred assignment",
    ast.Tuple: "nested tuple assignment",
    ast.List: "nested tuple assignment",
}


def is_no_op(stmt: ast.stmt) -> bool:
    """``pass``, ``...`` or a bare string (a docstring): statements that build nothing."""
    if isinstance(stmt, ast.Pass):
        return True
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and (stmt.value.value is Ellipsis or isinstance(stmt.value.value, str))
    )


class BodyConverter:
    """Converts the statements of one function body."""

    def __init__(self, ctx: FunctionContext) -> None:
        self.ctx = ctx

    @property
    def source(self) -> Source:
        return self.ctx.source

    def block(self, stmts: Sequence[ast.stmt], scope: Scope) -> SeqStmts:
        out: list[Stmt] = []
        for stmt in stmts:
            converted = self._stmt(stmt, scope)
            if isinstance(converted, list):
                out.extend(converted)
            elif converted is not None:
                out.append(converted)
        return SeqStmts(tuple(out), self.source.span(stmts[0]) if stmts else SYNTHETIC)

    def _stmt(self, stmt: ast.stmt, scope: Scope) -> Stmt | list[Stmt] | None:
        if is_no_op(stmt):
            return None
        conv = ExprConverter(self.ctx, scope)
        if isinstance(stmt, ast.Assign):
            return self._assign(stmt, conv)
        if isinstance(stmt, ast.AnnAssign):
            return self._annotated_assign(stmt, conv)
        if isinstance(stmt, ast.Expr):
            if not isinstance(stmt.value, ast.Call):
                self.source.error(
                    stmt, "expression statement has no effect; only calls may stand alone"
                )
            return EvalStmt(conv.expr(stmt.value), self.source.span(stmt))
        if isinstance(stmt, ast.Return):
            return self._return(stmt, conv)
        if isinstance(stmt, ast.If):
            return self._if(stmt, conv)
        if isinstance(stmt, ast.For):
            return self._for(stmt, conv)
        if isinstance(stmt, ast.While):
            return self._while(stmt, conv)
        if isinstance(stmt, ast.With):
            return self._with(stmt, conv)
        construct = _UNSUPPORTED.get(type(stmt), type(stmt).__name__)
        self.source.error(stmt, f"unsupported statement: '{construct}'")

    # --- assignment --------------------------------------------------------------------------

    def _assign(self, stmt: ast.Assign, conv: ExprConverter) -> Stmt:
        if len(stmt.targets) != 1:
            self.source.error(stmt.targets[1], "unsupported statement: 'chained assignment'")
        target = stmt.targets[0]
        value = conv.expr(stmt.value)
        if isinstance(target, ast.Tuple | ast.List):
            names = [self._target_name(element) for element in target.elts]
            if not (isinstance(value.type, TupleType) and len(value.type.items) == len(names)):
                self.source.error(
                    stmt.value,
                    f"cannot unpack {format_type(value.type)} into {len(names)} names",
                )
            targets = tuple(
                Var(name.id, ty, self.source.span(name))
                for name, ty in zip(names, value.type.items, strict=True)
            )
        else:
            name = self._target_name(target)
            self._require_result(stmt.value, value)
            targets = (Var(name.id, value.type, self.source.span(name)),)
        for var in targets:
            conv.scope.bind(var)
        return AssignStmt(targets, value, self.source.span(stmt))

    def _annotated_assign(self, stmt: ast.AnnAssign, conv: ExprConverter) -> Stmt:
        name = self._target_name(stmt.target)
        if stmt.value is None:
            self.source.error(stmt, "a declaration without a value is not supported")
        declared = value_type(stmt.annotation, self.ctx.module)
        value = conv.expr(stmt.value)
        if not compatible(declared, value.type):
            self.source.error(
                stmt.value,
                f"'{name.id}' is declared {format_type(declared)} but the value is "
                f"{format_type(value.type)}",
            )
        var = Var(name.id, value.type, self.source.span(name))
        conv.scope.bind(var)
        return AssignStmt((var,), value, self.source.span(stmt))

    def _target_name(self, target: ast.expr) -> ast.Name:
        if not isinstance(target, ast.Name):
            kind = _TARGET_KINDS.get(type(target), type(target).__name__)
            self.source.error(target, f"unsupported statement: '{kind}'")
        if target.id == self.ctx.receiver:
            self.source.error(target, f"cannot assign to '{target.id}'")
        return target

    def _require_result(self, node: ast.expr, value: Expr) -> None:
        if value.type == TupleType(()):
            self.source.error(node, f"'{text(node)}' produces no value to assign")

    # --- return ------------------------------------------------------------------------------

    def _return(self, stmt: ast.Return, conv: ExprConverter) -> Stmt | list[Stmt]:
        nodes: list[ast.expr] = []
        if isinstance(stmt.value, ast.Tuple):
            nodes = list(stmt.value.elts)
        elif stmt.value is not None:
            nodes = [stmt.value]
        values = tuple(conv.expr(node) for node in nodes)
        span = self.source.span(stmt)
        if not self.ctx.function.return_types:
            return self._unannotated_return(values, span)
        self._check_return(stmt, nodes, values)
        return ReturnStmt(values, span)

    def _unannotated_return(self, values: tuple[Expr, ...], span: Span) -> list[Stmt]:
        """``return v`` in a function without a return annotation, as upstream writes
        ``return 0`` at the end of a HOST orchestrator or ``return data`` at the end of a chip
        orchestration. Upstream declares no result for such a function either (its callers
        only see a type derived from the body); nothing here can use one, since a dispatch's
        result is not a value and an orchestration is called only by dispatch. So the values
        are evaluated for their effect (a returned task call still runs) and the function
        returns nothing."""
        effects: list[Stmt] = [EvalStmt(value, span) for value in values if isinstance(value, Call)]
        return [*effects, ReturnStmt((), span)]

    def _check_return(
        self, stmt: ast.Return, nodes: list[ast.expr], values: tuple[Expr, ...]
    ) -> None:
        declared = self.ctx.function.return_types
        name = self.ctx.function.name
        where = stmt.value if stmt.value is not None else stmt
        if len(values) == 1 and len(declared) > 1:
            if not compatible(TupleType(declared), values[0].type):
                self.source.error(
                    where,
                    f"'{name}' returns {format_type(TupleType(declared))}, got "
                    f"{format_type(values[0].type)}",
                )
            return
        if len(values) != len(declared):
            self.source.error(where, f"'{name}' returns {len(declared)} values, got {len(values)}")
        for position, (node, value, ty) in enumerate(zip(nodes, values, declared, strict=True), 1):
            if not compatible(ty, value.type):
                which = f"return value {position} of '{name}'" if len(declared) > 1 else f"'{name}'"
                self.source.error(
                    node, f"{which} must be {format_type(ty)}, got {format_type(value.type)}"
                )

    # --- control flow ------------------------------------------------------------------------

    def _if(self, stmt: ast.If, conv: ExprConverter) -> Stmt:
        cond = conv.scalar(stmt.test, "an if condition")
        scope = conv.scope
        then_scope, else_scope = scope.copy(), scope.copy()
        then_body = self.block(stmt.body, then_scope)
        else_body = self.block(stmt.orelse, else_scope) if stmt.orelse else None
        join(scope, (then_scope, else_scope), f"inside the if at line {stmt.lineno}")
        return IfStmt(cond, then_body, else_body, self.source.span(stmt))

    def _for(self, stmt: ast.For, conv: ExprConverter) -> Stmt:
        if stmt.orelse:
            self.source.error(stmt, "unsupported statement: 'for ... else'")
        start, stop, step = self._range(stmt.iter, conv)
        if not isinstance(stmt.target, ast.Name):
            self.source.error(stmt.target, "a for loop variable must be a single name")
        name = self._target_name(stmt.target)
        var = Var(name.id, INDEX, self.source.span(name))
        body_scope = conv.scope.copy()
        body_scope.bind(var)
        body = self._loop_body(stmt, body_scope, conv.scope)
        return ForStmt(var, start, stop, step, body, self.source.span(stmt))

    def _range(self, node: ast.expr, conv: ExprConverter) -> tuple[Expr, Expr, Expr]:
        if not (isinstance(node, ast.Call) and conv.dsl_path(node.func) == "pl.range"):
            self.source.error(
                node, f"for loops must iterate over pl.range(...), not '{text(node)}'"
            )
        if node.keywords:
            self.source.error(node.keywords[0], "pl.range(...) takes no keyword arguments")
        if not 1 <= len(node.args) <= 3:
            self.source.error(node, f"pl.range takes 1 to 3 arguments, got {len(node.args)}")
        bounds = [conv.scalar(arg, "a pl.range bound") for arg in node.args]
        if len(bounds) == 1:
            bounds = [ConstInt(0), bounds[0]]
        if len(bounds) == 2:
            bounds.append(ConstInt(1))
        if bounds[2] == ConstInt(0):
            self.source.error(node.args[2], "pl.range step must not be zero")
        return bounds[0], bounds[1], bounds[2]

    def _while(self, stmt: ast.While, conv: ExprConverter) -> Stmt:
        if stmt.orelse:
            self.source.error(stmt, "unsupported statement: 'while ... else'")
        cond = conv.scalar(stmt.test, "a while condition")
        body = self._loop_body(stmt, conv.scope.copy(), conv.scope)
        return WhileStmt(cond, body, self.source.span(stmt))

    def _loop_body(self, stmt: ast.For | ast.While, body_scope: Scope, scope: Scope) -> SeqStmts:
        """The body may run zero times: what it binds is maybe-unbound after the loop."""
        body = self.block(stmt.body, body_scope)
        join(scope, (body_scope, scope.copy()), f"inside the loop at line {stmt.lineno}")
        return body

    # --- communication domains ---------------------------------------------------------------

    def _with(self, stmt: ast.With, conv: ExprConverter) -> Stmt:
        call = comm_domain_call(stmt, self.ctx.module)
        if call is None:
            self.source.error(stmt, "unsupported statement: 'with'")
        if not self.ctx.function.is_host_orchestrator:
            self.source.error(
                call,
                f"{COMM_DOMAIN}(...) is only allowed in a HOST orchestrator "
                "(level=pl.Level.HOST): communication domains are set up by the host",
            )
        devices = comm_domain_devices(call, self.ctx.module)
        # The body runs exactly once, so what it binds stays bound after the block.
        body = self.block(stmt.body, conv.scope)
        return CommDomainScopeStmt("", (), devices, body, self.source.span(stmt))
