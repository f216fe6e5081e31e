"""IR statements. Bodies are :class:`SeqStmts`; names follow Python scoping within a function."""

from __future__ import annotations

from dataclasses import dataclass, field

from pypto_build.lowering.diagnostics import SYNTHETIC, Span
from pypto_build.lowering.fast_init import fast_init
from pypto_build.lowering.ir.exprs import Expr, Var


@fast_init
@dataclass(frozen=True)
class Stmt:
    """Base of all statements."""


@fast_init
@dataclass(frozen=True)
class AssignStmt(Stmt):
    """``a = e`` (one target) or ``a, b = e`` (tuple assignment of a tuple-typed ``e``)."""

    targets: tuple[Var, ...]
    value: Expr
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class EvalStmt(Stmt):
    """An expression evaluated for its effect (a kernel call whose result is unused)."""

    expr: Expr
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class ReturnStmt(Stmt):
    values: tuple[Expr, ...]
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class SeqStmts(Stmt):
    stmts: tuple[Stmt, ...]
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class IfStmt(Stmt):
    cond: Expr
    then_body: SeqStmts
    else_body: SeqStmts | None
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class ForStmt(Stmt):
    """``for var in pl.range(start, stop, step):`` — names assigned in ``body`` are loop-carried."""

    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: SeqStmts
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class WhileStmt(Stmt):
    cond: Expr
    body: SeqStmts
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class CommDomainScopeStmt(Stmt):
    """A communication domain made explicit by MaterializeCommDomainScopes: the window buffers
    allocated for it (``buffers``, by name), its devices (``None``: every rank of the world)."""

    name: str
    buffers: tuple[str, ...]
    devices: tuple[int, ...] | None
    body: SeqStmts
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)
