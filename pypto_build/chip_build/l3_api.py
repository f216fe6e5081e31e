"""The L3 (host) orchestration API that generated HOST orchestrators are written against.

A HOST orchestrator runs in the host process and drives every rank's chip: it sets up the comm
domains whose windows the ranks exchange, and submits one chip-level callable (a sub-build under
``next_levels/``) per rank and step. Its generated module (``orchestration/<name>.py``, written
by :mod:`pypto_build.chip_build.host_orch_codegen`) imports only this module, so it type-checks
on its own and any runtime that implements these protocols can run it: a simulator, or an
adapter onto upstream simpler's L3 ``Worker``, whose call shapes this API keeps
(``allocate_domain`` as a context manager with per-rank domain handles, ``TaskArgs`` with
``add_tensor`` / ``add_scalar``, ``submit_next_level(callable, args, config, worker=r)``). Its
``PARAMETERS`` table (:class:`Parameter`) tells a runtime what to pass before anything runs.

Two points where it is more explicit than upstream: a domain is indexed by device id (the
``worker`` a dispatch goes to), and each rank's ordering token — the tensor that keeps one
rank's collective dispatches in program order — is a field of its domain handle rather than a
separately managed tensor.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Literal, Protocol


class DataType(enum.IntEnum):
    """Element types of host tensors; the values are the runtime's (``kernel_abi.h``)."""

    FLOAT32 = 0
    FLOAT16 = 1
    INT32 = 2
    INT16 = 3
    INT8 = 4
    UINT8 = 5
    BFLOAT16 = 6
    INT64 = 7
    UINT64 = 8
    UINT16 = 9
    UINT32 = 10
    BOOL = 11


class TensorArgType(enum.Enum):
    """How a submitted callable uses a tensor; the runtime orders dispatches by it."""

    INPUT = "INPUT"
    #: An existing tensor the callable overwrites without reading it.
    OUTPUT_EXISTING = "OUTPUT_EXISTING"
    INOUT = "INOUT"


#: A scalar argument: an integer (counts, a ``CommContext`` device address) or a float.
ScalarValue = int | float

_FLOAT_TYPES = frozenset({DataType.FLOAT32, DataType.FLOAT16, DataType.BFLOAT16})


def scalar_type(dtype: DataType) -> type[int] | type[float] | type[bool]:
    """The Python type a scalar of element type ``dtype`` is passed as."""
    if dtype is DataType.BOOL:
        return bool
    return float if dtype in _FLOAT_TYPES else int


#: A parameter is a tensor or a scalar.
ParameterKind = Literal["tensor", "scalar"]
#: How the orchestrator uses a parameter, spelled as the DSL's ``pl.In`` / ``pl.Out`` /
#: ``pl.InOut``.
ParameterDirection = Literal["In", "Out", "InOut"]


@dataclass(frozen=True)
class Parameter:
    """One parameter of a HOST orchestrator, as its module's ``PARAMETERS`` table lists it.

    The table is in declaration order; a runtime binds the tensors to ``args[0]``,
    ``args[1]``, ... and the scalars to ``args.scalar(0)``, ... in that order. It exists so a
    runtime can check its inputs and allocate the ``Out`` tensors it is not given before
    anything runs. A scalar has shape ``()`` and is always ``In``.
    """

    name: str
    kind: ParameterKind
    shape: tuple[int, ...]
    dtype: DataType
    direction: ParameterDirection

    def __post_init__(self) -> None:
        if self.kind not in ("tensor", "scalar"):
            raise ValueError(f"parameter {self.name}: unknown kind {self.kind!r}")
        if self.direction not in ("In", "Out", "InOut"):
            raise ValueError(f"parameter {self.name}: unknown direction {self.direction!r}")
        if self.kind == "scalar" and (self.shape or self.direction != "In"):
            raise ValueError(f"parameter {self.name}: a scalar has shape () and direction In")

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"


class HostTensor(Protocol):
    """A tensor the host orchestrator can hand to a dispatch: an argument or a window view."""

    def slice(self, offsets: Sequence[int], shape: Sequence[int]) -> HostTensor:
        """The region of extent ``shape`` starting at ``offsets`` (no copy)."""
        ...

    def reshape(self, shape: Sequence[int]) -> HostTensor:
        """The same (contiguous) elements under a new shape (no copy)."""
        ...


class HostArgs(Protocol):
    """The orchestrator's own arguments: tensors by position, then scalars by position."""

    def __getitem__(self, index: int) -> HostTensor: ...

    def scalar(self, index: int) -> ScalarValue: ...


@dataclass(frozen=True)
class BufferSpec:
    """One window buffer of a comm domain: ``nbytes`` bytes in every rank's window."""

    name: str
    nbytes: int


class DomainBuffer(Protocol):
    """One rank's slot of a window buffer."""

    def tensor(self, shape: Sequence[int], dtype: DataType) -> HostTensor:
        """A view of the slot's leading bytes as a packed tensor of ``shape`` and ``dtype``."""
        ...


class DomainHandle(Protocol):
    """One rank's view of a comm domain."""

    @property
    def domain_rank(self) -> int:
        """This rank's dense index in the domain."""
        ...

    @property
    def domain_size(self) -> int:
        """Ranks in the domain."""
        ...

    @property
    def device_ctx(self) -> int:
        """Device address of this rank's ``CommContext`` (passed to chips as a scalar)."""
        ...

    @property
    def buffers(self) -> Mapping[str, DomainBuffer]:
        """This rank's slot of each window buffer, by :attr:`BufferSpec.name`."""
        ...

    @property
    def ordering_token(self) -> HostTensor:
        """This rank's token: every collective dispatch takes it ``INOUT``, so one rank's
        collectives run in program order."""
        ...


class Domain(Protocol):
    """A live comm domain: the handle of each member device, indexed by device id."""

    def __getitem__(self, device: int) -> DomainHandle: ...


class NextLevel(Protocol):
    """A registered chip-level callable (one sub-build under ``next_levels/``)."""

    @property
    def name(self) -> str: ...


@dataclass
class CallConfig:
    """Per-run settings forwarded with each dispatch."""

    #: AICPU scheduler threads; 0 selects the runtime's architecture default.
    aicpu_thread_num: int = 0


@dataclass
class TaskArgs:
    """The arguments of one dispatch: tensors first, then scalars (the chip ABI's order)."""

    tensors: list[tuple[HostTensor, TensorArgType]] = field(default_factory=list)
    scalars: list[ScalarValue] = field(default_factory=list)

    def add_tensor(self, tensor: HostTensor, arg_type: TensorArgType) -> None:
        if self.scalars:
            raise ValueError("a tensor argument was added after a scalar")
        self.tensors.append((tensor, arg_type))

    def add_scalar(self, value: ScalarValue) -> None:
        self.scalars.append(value)


class Orchestrator(Protocol):
    """What the runtime offers a HOST orchestrator."""

    def world_size(self) -> int:
        """Ranks (devices) of the run."""
        ...

    def allocate_domain(
        self, name: str, devices: Sequence[int], buffers: Sequence[BufferSpec]
    ) -> AbstractContextManager[Domain]:
        """Create comm domain ``name`` over ``devices`` with ``buffers`` in every member's
        window; it is released when the context exits (after the dispatches in it finish)."""
        ...

    def submit_next_level(
        self, next_level: NextLevel, args: TaskArgs, config: CallConfig, *, worker: int
    ) -> None:
        """Run ``next_level`` with ``args`` on device ``worker``."""
        ...


#: The chip-level callables of a build, by sub-build name (``next_levels/<name>``).
Callables = Mapping[str, NextLevel]

#: A HOST orchestrator, as a generated module's ``build(callables)`` returns it.
OrchestrationFn = Callable[[Orchestrator, HostArgs, CallConfig], None]
