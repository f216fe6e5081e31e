"""Functions and programs."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from pypto_build.lowering.diagnostics import SYNTHETIC, Span
from pypto_build.lowering.ir.exprs import Attrs, AttrValue, Var, get_attr
from pypto_build.lowering.ir.stmts import SeqStmts
from pypto_build.lowering.ir.types import ParamDirection, Type


class FunctionType(enum.Enum):
    """What a function is; spelled as in the DSL (``pl.FunctionType.<name>``)."""

    Opaque = "Opaque"
    Orchestration = "Orchestration"
    InCore = "InCore"
    Inline = "Inline"
    AIC = "AIC"
    AIV = "AIV"
    Group = "Group"
    Spmd = "Spmd"
    Graph = "Graph"

    @property
    def is_orchestration_like(self) -> bool:
        return self in (FunctionType.Orchestration, FunctionType.Graph)

    @property
    def is_kernel(self) -> bool:
        """Runs on an AI core (InCore family): a task of an orchestration."""
        return self in (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)


class Level(enum.Enum):
    HOST = "HOST"
    CHIP = "CHIP"


class Role(enum.Enum):
    """``pl.Role``: upstream's spelling of a function's place in the hierarchy. Not stored on
    :class:`Function` (the function type implies it); the front end checks that they agree."""

    Orchestrator = "Orchestrator"
    SubWorker = "SubWorker"


@dataclass(frozen=True)
class Param:
    var: Var
    direction: ParamDirection = ParamDirection.In


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[Param, ...]
    return_types: tuple[Type, ...]
    body: SeqStmts
    func_type: FunctionType = FunctionType.Opaque
    level: Level = Level.CHIP
    attrs: Attrs = ()
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)

    def attr(self, key: str, default: AttrValue = None) -> AttrValue:
        return get_attr(self.attrs, key, default)

    @property
    def is_host_orchestrator(self) -> bool:
        return self.level is Level.HOST and self.func_type.is_orchestration_like

    @property
    def is_chip_orchestration(self) -> bool:
        return self.level is Level.CHIP and self.func_type.is_orchestration_like


@dataclass(frozen=True)
class Program:
    """A ``@pl.program`` class: its functions in source order (synthesized ones appended)."""

    name: str
    functions: tuple[Function, ...]
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)

    def function(self, name: str) -> Function | None:
        for func in self.functions:
            if func.name == name:
                return func
        return None

    def replace_function(self, func: Function) -> Program:
        return Program(
            self.name,
            tuple(func if f.name == func.name else f for f in self.functions),
            self.span,
        )
