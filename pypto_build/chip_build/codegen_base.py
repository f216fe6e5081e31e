"""What the two orchestration backends share: indented output and the statement dispatch.

The HOST orchestrator codegen (Python, :mod:`~pypto_build.chip_build.host_orch_codegen`) and the
CHIP orchestration codegen (C++, :mod:`~pypto_build.chip_build.orchestration_codegen`) both
replay a function body statement by statement, in program order, into indented source lines.
They differ only in what each statement becomes, so :class:`StmtCodegen` owns the lines, the
indentation and the one dispatch over statement kinds, and each backend implements a hook per
kind. The lowering's CheckLegality pass has rejected every statement a backend has no form for,
so meeting one here is an internal error. Both backends also target the same runtime, so they
read a call's argument directions and map element types to the runtime's through one
definition here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from pypto_build.chip_build import runtime_types
from pypto_build.lowering.diagnostics import InternalError, Span
from pypto_build.lowering.ir import (
    AssignStmt,
    Call,
    CommDomainScopeStmt,
    DataType,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    IfStmt,
    ReturnStmt,
    SeqStmts,
    Stmt,
    WhileStmt,
)
from pypto_build.lowering.ir.names import ArgDirection, arg_directions
from pypto_build.lowering.ops.signature import expr_span

#: The runtime's element type (``DataType`` of ``kernel_abi.h``, which
#: :class:`runtime_types.DataType` mirrors) of each IR dtype a runtime tensor can hold; an index is
#: 64-bit there.
RUNTIME_DTYPES = {
    DataType.FP32: runtime_types.DataType.FLOAT32,
    DataType.FP16: runtime_types.DataType.FLOAT16,
    DataType.BF16: runtime_types.DataType.BFLOAT16,
    DataType.INT8: runtime_types.DataType.INT8,
    DataType.UINT8: runtime_types.DataType.UINT8,
    DataType.INT16: runtime_types.DataType.INT16,
    DataType.INT32: runtime_types.DataType.INT32,
    DataType.INT64: runtime_types.DataType.INT64,
    DataType.INDEX: runtime_types.DataType.INT64,
    DataType.BOOL: runtime_types.DataType.BOOL,
}


def call_directions(call: Call, phase: str) -> tuple[ArgDirection, ...]:
    """The ``arg_directions`` DeriveCallDirections attached to ``call``: one per argument, a
    tensor's :class:`ParamDirection` or None for an argument passed by value."""
    directions = arg_directions(call)
    if directions is None:
        raise InternalError(
            f"{phase}: call of '{call.callee_name}' lacks valid arg_directions; "
            "DeriveCallDirections must run first"
        )
    return directions


class StmtCodegen(ABC):
    """Accumulates the indented lines of one function body; one hook per statement kind.

    A ``return`` that is the last statement of the body emits nothing (the generated function
    ends there anyway); its values are evaluated for their effects only, since results reach
    the caller through the Out/InOut arguments.
    """

    #: One level of indentation of the generated language.
    INDENT: ClassVar[str]
    #: The statement that leaves the generated function early.
    RETURN: ClassVar[str]
    #: The statement a block needs when nothing else is emitted into it (None: none needed).
    EMPTY_BLOCK: ClassVar[str | None] = None

    def __init__(self, func: Function, depth: int) -> None:
        self.func = func
        self.lines: list[str] = []
        self.depth = depth

    def emit(self, line: str) -> None:
        self.lines.append(self.INDENT * self.depth + line)

    @contextmanager
    def indented(self) -> Iterator[None]:
        """Lines emitted inside the ``with`` are one level deeper."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def _block(self, body: SeqStmts, *, final: bool = False) -> None:
        """``body`` at the current depth; ``final``: it ends the function."""
        start = len(self.lines)
        for index, stmt in enumerate(body.stmts):
            self._stmt(stmt, final=final and index == len(body.stmts) - 1)
        if self.EMPTY_BLOCK is not None and len(self.lines) == start and not final:
            self.emit(self.EMPTY_BLOCK)

    def _nested(self, body: SeqStmts) -> None:
        with self.indented():
            self._block(body)

    def _stmt(self, stmt: Stmt, *, final: bool) -> None:
        if isinstance(stmt, AssignStmt):
            self._assign(stmt)
        elif isinstance(stmt, EvalStmt):
            self._effect(stmt.expr, stmt.span)
        elif isinstance(stmt, ReturnStmt):
            for value in stmt.values:
                self._effect(value, stmt.span)
            if not final:
                self.emit(self.RETURN)
        elif isinstance(stmt, CommDomainScopeStmt):
            self._scope(stmt)
        elif isinstance(stmt, IfStmt):
            self._if(stmt)
        elif isinstance(stmt, ForStmt):
            self._for(stmt)
        elif isinstance(stmt, WhileStmt):
            self._while(stmt)
        elif isinstance(stmt, SeqStmts):
            self._block(stmt, final=final)
        else:
            self._reject(stmt)

    def _reject(self, stmt: Stmt) -> None:
        """A statement kind the backend does not generate."""
        span = expr_span(stmt, self.func.span)
        raise InternalError(f"a {type(stmt).__name__} at {span} has no generated form")

    def _scope(self, stmt: CommDomainScopeStmt) -> None:
        """A communication domain scope; only a backend that allocates domains has one."""
        self._reject(stmt)

    @abstractmethod
    def _assign(self, stmt: AssignStmt) -> None: ...

    @abstractmethod
    def _effect(self, expr: Expr, at: Span) -> None:
        """Evaluate ``expr`` (an expression statement or a returned value) for its effects."""

    @abstractmethod
    def _if(self, stmt: IfStmt) -> None: ...

    @abstractmethod
    def _for(self, stmt: ForStmt) -> None: ...

    @abstractmethod
    def _while(self, stmt: WhileStmt) -> None: ...
