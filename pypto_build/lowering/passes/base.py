"""Pass contract and pass manager.

Each pass is a small frozen dataclass with a ``name``, the program properties it ``requires``
and those it ``produces``, and one ``apply``. The manager tracks which properties hold and
refuses a pass whose requirements are missing, naming them: the pass order is a
correctness condition (a collective rewritten after DeriveCallDirections would lose its
dependency edges), so a pipeline in the wrong order must not run.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from pypto_build.errors import PyptoUsageError
from pypto_build.gc_pause import collector_paused
from pypto_build.lowering.ir import Program


class Property(enum.Enum):
    """A fact about a program that a pass establishes and later passes rely on."""

    COMPOSITE_OPS_LOWERED = "CompositeOpsLowered"
    CREATE_ASSEMBLE_FUSED = "CreateAssembleFused"
    L2_COLLECTIVES_LOWERED = "L2CollectivesLowered"
    CALL_DIRECTIONS_DERIVED = "CallDirectionsDerived"
    TASK_DEPENDENCIES_DERIVED = "TaskDependenciesDerived"
    COMM_DOMAIN_SCOPES_MATERIALIZED = "CommDomainScopesMaterialized"
    HOST_COLLECTIVES_LOWERED = "HostCollectivesLowered"
    DIST_TENSOR_CTX_MATERIALIZED = "DistTensorCtxMaterialized"


@dataclass(frozen=True)
class Pass:
    """Base of every program pass. Subclasses set the three class variables and ``apply``."""

    name: ClassVar[str]
    requires: ClassVar[frozenset[Property]] = frozenset()
    produces: ClassVar[frozenset[Property]] = frozenset()

    def apply(self, program: Program) -> Program:
        raise NotImplementedError(f"{type(self).__name__} does not implement apply")


class PipelineOrderError(PyptoUsageError, ValueError):
    """A pass was scheduled before the passes that establish what it requires."""

    def __init__(self, pass_name: str, missing: Sequence[Property]) -> None:
        names = ", ".join(p.value for p in missing)
        super().__init__(
            f"pass '{pass_name}' requires {names}, which no earlier pass in the pipeline produces"
        )
        self.pass_name = pass_name
        self.missing = tuple(missing)


#: Called after each pass with the pass and its output (printing ``--after``, verifying in tests).
Instrument = Callable[[Pass, Program], None]


@dataclass(frozen=True)
class PassManager:
    """Runs passes in order, checking each pass's requirements before it runs."""

    passes: tuple[Pass, ...]

    def check_order(self, established: frozenset[Property] = frozenset()) -> None:
        """Refuse the pipeline, before running anything, if a pass would lack a property."""
        have = set(established)
        for p in self.passes:
            missing = sorted(p.requires - have, key=lambda prop: prop.value)
            if missing:
                raise PipelineOrderError(p.name, missing)
            have |= p.produces

    def run(
        self,
        program: Program,
        instruments: Sequence[Instrument] = (),
        established: frozenset[Property] = frozenset(),
    ) -> Program:
        self.check_order(established)
        with collector_paused():  # a large program's passes build millions of acyclic nodes
            for p in self.passes:
                program = p.apply(program)
                for instrument in instruments:
                    instrument(p, program)
        return program

    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes)

    def until(self, pass_name: str) -> PassManager:
        """The prefix of this pipeline ending with ``pass_name`` (for ``lower --after``)."""
        for index, p in enumerate(self.passes):
            if p.name == pass_name:
                return PassManager(self.passes[: index + 1])
        known = ", ".join(self.names())
        raise KeyError(f"unknown pass '{pass_name}'; passes are: {known}")
