"""The L3 orchestration API (:mod:`pypto_build.chip_build.l3_api`) on the simulated world, so a
generated HOST orchestrator module runs unchanged on P simulated ranks.

* ``allocate_domain`` creates the domain's windows (one per member rank, zeroed, every buffer
  at the same offset in every window) and each member's ``CommContext``; a member's rank in the
  domain is its position in ``devices``. When the ``with`` block ends, the domain's dispatches
  are waited for (a fence), the windows are snapshotted for the result and then freed.
* ``submit_next_level`` describes the arguments at once (so a bad argument fails in the
  orchestrator, where it was written) and queues the dispatch on the worker's rank thread.
* Host tensors are :class:`~pypto_build.chip_build.sim.tensors.SimTensor` views; scalars are
  passed as 64-bit patterns: integers two's complement, floats as their FP32 bits (the only
  floating-point scalar a chip orchestration takes), booleans as 0 or 1.
* ``CallConfig.aicpu_thread_num`` has no meaning here: the simulation schedules no AICPU
  threads.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.l3_api import (
    BufferSpec,
    CallConfig,
    DataType,
    NextLevel,
    ScalarValue,
    TaskArgs,
)
from pypto_build.chip_build.sim.runtime import NativeCallable
from pypto_build.chip_build.sim.tensors import SimTensor, window_tensor
from pypto_build.chip_build.sim.world import Dispatch, World

#: Every window buffer starts on a cache line (signals are atomics; payloads move in lines).
BUFFER_ALIGNMENT = 64
_UINT64_MASK = (1 << 64) - 1


def scalar_bits(value: ScalarValue) -> int:
    """The 64-bit pattern a scalar argument is passed as (see the module)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if not -(1 << 63) <= value <= _UINT64_MASK:
            raise OverflowError(f"scalar {value} does not fit in 64 bits")
        return value & _UINT64_MASK
    return int.from_bytes(struct.pack("<f", value), "little")


@dataclass(frozen=True)
class SimNextLevel:
    """A chip sub-build loaded into the runtime (an l3_api ``NextLevel``)."""

    name: str
    native: NativeCallable


@dataclass(frozen=True)
class SimHostArgs:
    """The orchestrator's own arguments (l3_api ``HostArgs``)."""

    tensors: tuple[SimTensor, ...]
    scalars: tuple[ScalarValue, ...]

    def __getitem__(self, index: int) -> SimTensor:
        return self.tensors[index]

    def scalar(self, index: int) -> ScalarValue:
        return self.scalars[index]


@dataclass(frozen=True)
class SimDomainBuffer:
    """One rank's slot of a window buffer (l3_api ``DomainBuffer``)."""

    slot: npt.NDArray[np.uint8]

    def tensor(self, shape: Sequence[int], dtype: DataType) -> SimTensor:
        return window_tensor(self.slot, shape, dtype)


@dataclass(frozen=True)
class SimDomainHandle:
    """One member's view of a comm domain (l3_api ``DomainHandle``)."""

    domain_rank: int
    domain_size: int
    device_ctx: int
    buffers: Mapping[str, SimDomainBuffer]
    ordering_token: SimTensor


@dataclass(frozen=True)
class BufferLayout:
    """Where a window buffer sits in every member's window."""

    name: str
    offset: int
    nbytes: int


def layout_buffers(buffers: Sequence[BufferSpec]) -> tuple[tuple[BufferLayout, ...], int]:
    """Each buffer's offset (in order, cache-line aligned) and the window size they need."""
    layouts: list[BufferLayout] = []
    offset = 0
    for spec in buffers:
        if spec.nbytes < 0:
            raise ValueError(f"window buffer '{spec.name}' has a negative size {spec.nbytes}")
        if any(layout.name == spec.name for layout in layouts):
            raise ValueError(f"window buffer '{spec.name}' is declared twice")
        layouts.append(BufferLayout(spec.name, offset, spec.nbytes))
        offset += -(-spec.nbytes // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT
    return tuple(layouts), offset


@dataclass(frozen=True)
class DomainSnapshot:
    """A comm domain's windows as they were when its ``with`` block ended."""

    name: str
    devices: tuple[int, ...]
    buffers: tuple[BufferLayout, ...]
    #: A copy of each member's window, in ``devices`` order.
    windows: tuple[npt.NDArray[np.uint8], ...]

    def buffer(self, name: str, device: int) -> npt.NDArray[np.uint8]:
        """The bytes of buffer ``name`` in ``device``'s window."""
        for layout in self.buffers:
            if layout.name == name:
                window = self.windows[self._member(device)]
                return window[layout.offset : layout.offset + layout.nbytes]
        known = ", ".join(layout.name for layout in self.buffers)
        raise KeyError(f"domain {self.name} has no window buffer '{name}' (it has: {known})")

    def view(
        self, name: str, device: int, shape: Sequence[int], dtype: DataType
    ) -> npt.NDArray[np.generic]:
        """Buffer ``name`` of ``device`` read as a packed ``shape`` tensor of ``dtype``."""
        return window_tensor(self.buffer(name, device), shape, dtype).view

    def _member(self, device: int) -> int:
        try:
            return self.devices.index(device)
        except ValueError:
            raise KeyError(f"device {device} is not a member of domain {self.name}") from None


class SimDomain:
    """A live comm domain (l3_api ``Domain``): the handle of each member device."""

    def __init__(self, handles: Mapping[int, SimDomainHandle], name: str) -> None:
        self._handles = handles
        self.name = name

    def __getitem__(self, device: int) -> SimDomainHandle:
        try:
            return self._handles[device]
        except KeyError:
            members = ", ".join(str(d) for d in self._handles)
            raise KeyError(
                f"device {device} is not a member of comm domain {self.name} ({members})"
            ) from None


class SimOrchestrator:
    """What a HOST orchestrator sees (l3_api ``Orchestrator``), running on ``world``."""

    def __init__(self, world: World) -> None:
        self.world = world
        #: The domains whose ``with`` blocks have ended, in that order.
        self.snapshots: list[DomainSnapshot] = []

    def world_size(self) -> int:
        return self.world.nranks

    @contextlib.contextmanager
    def allocate_domain(
        self, name: str, devices: Sequence[int], buffers: Sequence[BufferSpec]
    ) -> Iterator[SimDomain]:
        members = tuple(devices)
        if not members or len(set(members)) != len(members):
            raise ValueError(f"comm domain {name} needs distinct devices, got {list(members)}")
        for device in members:
            if not 0 <= device < self.world.nranks:
                raise ValueError(
                    f"comm domain {name}: device {device} is not a rank of this run "
                    f"(0..{self.world.nranks - 1})"
                )
        layouts, window_bytes = layout_buffers(buffers)
        native = self.world.create_domain(len(members), window_bytes)
        tokens = np.zeros((len(members), 1), dtype=np.int32)
        handles: dict[int, SimDomainHandle] = {}
        for rank, device in enumerate(members):
            window = native.window(rank)
            handles[device] = SimDomainHandle(
                domain_rank=rank,
                domain_size=len(members),
                device_ctx=native.contexts[rank],
                buffers={
                    layout.name: SimDomainBuffer(
                        window[layout.offset : layout.offset + layout.nbytes]
                    )
                    for layout in layouts
                },
                ordering_token=SimTensor(tokens, tokens[rank : rank + 1], DataType.INT32),
            )
        try:
            yield SimDomain(handles, name)
            self.world.fence()
            windows = tuple(native.window(rank).copy() for rank in range(len(members)))
            self.snapshots.append(DomainSnapshot(name, members, layouts, windows))
        finally:
            self.world.quiesce()  # no dispatch may still use the windows
            self.world.release_domain(native)

    def submit_next_level(
        self, next_level: NextLevel, args: TaskArgs, config: CallConfig, *, worker: int
    ) -> None:
        if not isinstance(next_level, SimNextLevel):
            raise TypeError(f"{next_level!r} is not a chip callable of this simulation")
        tensors = []
        for tensor, _ in args.tensors:
            if not isinstance(tensor, SimTensor):
                raise TypeError(f"{tensor!r} is not a tensor of this simulation")
            tensors.append(tensor)
        dispatch = Dispatch(
            next_level.name,
            next_level.native,
            tuple(tensor.describe(self.world.runtime) for tensor in tensors),
            tuple(scalar_bits(value) for value in args.scalars),
            memory=tuple(tensors),
        )
        self.world.submit(worker, dispatch)
