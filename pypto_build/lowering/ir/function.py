"""Functions and programs."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property

from pypto_build.lowering.diagnostics import SYNTHETIC, Span
from pypto_build.lowering.fast_init import fast_init
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


@fast_init
@dataclass(frozen=True)
class Param:
    var: Var
    direction: ParamDirection = ParamDirection.In


@fast_init
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


@fast_init
@dataclass(frozen=True)
class Program:
    """A ``@pl.program`` class: its functions in source order (synthesized ones appended)."""

    name: str
    functions: tuple[Function, ...]
    span: Span = field(default=SYNTHETIC, compare=False, repr=False)

    def function(self, name: str) -> Function | None:
        """The function named ``name`` (the first, should a program under construction hold
        two), or None."""
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, Function]:
        # Passes and backends look functions up once per call site: a scan of a program of
        # many pipelines would make them quadratic. The program is immutable, so its index is
        # built once (in its instance dict, outside the fields that equality compares).
        index: dict[str, Function] = {}
        for func in self.functions:
            index.setdefault(func.name, func)
        return index
