"""PyPTO's L3 orchestration API on the simulated world, so a HOST orchestrator module written for
PyPTO's runtime (:mod:`pypto_build.chip_build.host_orch_codegen`) runs unchanged on P simulated
ranks. :mod:`.host_env` hands the module these objects under the names it imports.

* ``orch.allocate_domain(name=, workers=, window_size=, buffers=[CommBufferSpec, ...])`` creates
  the domain's windows (one per member, zeroed; or, with ``memory=``, the simulator's own
  argument, windows a run filled before it) and each member's ``CommContext``; the buffers are
  carved from every window in declaration order, as simpler carves them, and a member's rank in
  the domain is its position in ``workers``. The handle is indexed by worker (device) id; each
  member's handle has simpler's fields (``domain_rank``, ``domain_size``, ``device_ctx``,
  ``buffers``), and ``buffers[name].tensor(shapes, dtype, strides=None, byte_offset=0)`` views a
  window slot. When the ``with`` block ends, the domain's dispatches are waited for (a fence), and
  the domain is freed; its windows' memory passes to the snapshot the result keeps (copied only
  when abandoned threads may still write it). A block that ends in an error (a rank
  failed, the run hung) is snapshotted too: what the windows held then is what a user debugging
  the failure needs.
* ``orch.submit_next_level(callable, args, config, worker=)`` (and pypto's ``_submit_chip``
  around it) describes the arguments at once, so a bad argument fails in the orchestrator, where
  it was written, and queues the dispatch on the worker's rank thread.
* Host tensors are the caller's NumPy arrays and views of them; ``make_tensor_arg`` describes one
  in place (PyPTO's runtime takes contiguous host tensors only, and so does this). Scalars are
  passed as 64-bit patterns: integers two's complement, floats as their FP32 bits (the only
  floating-point scalar a chip orchestration takes), booleans as 0 or 1.
* ``CallConfig.aicpu_thread_num`` has no meaning here: the simulation schedules no AICPU
  threads.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.runtime_types import DataType, ScalarValue, TensorArgType
from pypto_build.chip_build.sim.runtime import NativeCallable
from pypto_build.chip_build.sim.shared import Segment, stack
from pypto_build.chip_build.sim.tensors import SimTensor, window_tensor
from pypto_build.chip_build.sim.world import Dispatch, World

_UINT64_MASK = (1 << 64) - 1
#: The ``CommBufferSpec`` element type of a buffer declared in bytes.
OPAQUE = "opaque"


def scalar_bits(value: ScalarValue) -> int:
    """The 64-bit pattern a scalar argument is passed as (see the module)."""
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer):
        value = int(value)
        if not -(1 << 63) <= value <= _UINT64_MASK:
            raise OverflowError(f"scalar {value} does not fit in 64 bits")
        return value & _UINT64_MASK
    return int.from_bytes(struct.pack("<f", value), "little")


@dataclass
class CallConfig:
    """Per-run settings forwarded with each dispatch (simpler's ``CallConfig``)."""

    #: AICPU scheduler threads; 0 selects the runtime's architecture default.
    aicpu_thread_num: int = 0


@dataclass(frozen=True)
class CommBufferSpec:
    """One window buffer of a comm domain: ``nbytes`` bytes of every member's window."""

    name: str
    dtype: str
    count: int
    nbytes: int
    load_from_host: bool = False
    store_to_host: bool = False


@dataclass
class TaskArgs:
    """The arguments of one dispatch: tensors first, then scalars (the chip ABI's order)."""

    tensors: list[tuple[SimTensor, TensorArgType]] = field(default_factory=list)
    scalars: list[ScalarValue] = field(default_factory=list)

    def add_tensor(self, tensor: SimTensor, tag: TensorArgType = TensorArgType.INPUT) -> None:
        if self.scalars:
            raise ValueError("TaskArgs: cannot add tensor after scalar")
        if not isinstance(tensor, SimTensor):
            raise TypeError(f"{tensor!r} is not a tensor of this simulation (use make_tensor_arg)")
        self.tensors.append((tensor, tag))

    def add_scalar(self, value: ScalarValue) -> None:
        self.scalars.append(value)


def make_tensor_arg(worker: object, tensor: object) -> SimTensor:
    """A host array (or a view of one) as a tensor argument, described in place."""
    if isinstance(tensor, SimTensor):
        return tensor
    if not isinstance(tensor, np.ndarray):
        raise TypeError(f"a host tensor argument must be a NumPy array, got {type(tensor)}")
    if not tensor.flags.c_contiguous:
        raise ValueError(
            f"a host tensor argument must be contiguous (row-major); got a view of shape "
            f"{tensor.shape} with byte strides {tensor.strides}"
        )
    return SimTensor.of_view(tensor)


@dataclass(frozen=True)
class SimNextLevel:
    """A chip sub-build loaded into the runtime: what ``callables[name]`` holds."""

    name: str
    native: NativeCallable


@dataclass(frozen=True)
class SimDomainBuffer:
    """One member's slot of a window buffer."""

    slot: npt.NDArray[np.uint8]

    def tensor(
        self,
        shapes: Sequence[int],
        dtype: DataType | int,
        strides: Sequence[int] | None = None,
        byte_offset: int = 0,
    ) -> SimTensor:
        return window_tensor(self.slot, shapes, DataType(dtype), strides, byte_offset)


@dataclass(frozen=True)
class SimDomainHandle:
    """One member's view of a comm domain (simpler's ``ChipDomainContext``)."""

    name: str
    domain_rank: int
    domain_size: int
    device_ctx: int
    buffers: Mapping[str, SimDomainBuffer]


@dataclass(frozen=True)
class BufferLayout:
    """Where a window buffer sits in every member's window, and what it holds."""

    name: str
    offset: int
    #: Bytes carved from the window (the declared size, padded).
    nbytes: int
    #: The declared elements: ``count`` of ``dtype`` (simpler's ``CommBufferSpec`` fields;
    #: ``opaque`` counts bytes, as pypto-build's HOST orchestrators declare every buffer).
    count: int = 0
    dtype: str = OPAQUE

    @property
    def element(self) -> np.dtype[np.generic]:
        """The NumPy element type of the declared contents."""
        return np.dtype(np.uint8) if self.dtype == OPAQUE else np.dtype(self.dtype)


def layout_buffers(buffers: Sequence[CommBufferSpec], window_size: int) -> tuple[BufferLayout, ...]:
    """Each buffer's offset: carved in declaration order, as simpler carves them; they must fit
    in ``window_size`` bytes."""
    layouts: list[BufferLayout] = []
    offset = 0
    for spec in buffers:
        if spec.nbytes < 0:
            raise ValueError(f"window buffer '{spec.name}' has a negative size {spec.nbytes}")
        if any(layout.name == spec.name for layout in layouts):
            raise ValueError(f"window buffer '{spec.name}' is declared twice")
        layout = BufferLayout(spec.name, offset, spec.nbytes, spec.count, spec.dtype)
        if layout.count * layout.element.itemsize > spec.nbytes:
            raise ValueError(
                f"window buffer '{spec.name}' declares {spec.count} {spec.dtype} elements in "
                f"{spec.nbytes} bytes"
            )
        layouts.append(layout)
        offset += spec.nbytes
    if offset > window_size:
        raise ValueError(f"the window buffers need {offset} bytes; the window has {window_size}")
    return tuple(layouts)


@dataclass(frozen=True)
class DomainSnapshot:
    """A comm domain's windows as they were when its ``with`` block ended."""

    name: str
    devices: tuple[int, ...]
    buffers: tuple[BufferLayout, ...]
    #: Each member's window, in ``devices`` order (the run's memory, no longer in use).
    windows: tuple[npt.NDArray[np.uint8], ...]

    def buffer(self, name: str, device: int) -> npt.NDArray[np.uint8]:
        """The bytes of buffer ``name`` in ``device``'s window."""
        layout = self._layout(name)
        window = self.windows[self._member(device)]
        return window[layout.offset : layout.offset + layout.nbytes]

    def _layout(self, name: str) -> BufferLayout:
        for layout in self.buffers:
            if layout.name == name:
                return layout
        known = ", ".join(layout.name for layout in self.buffers)
        raise KeyError(f"domain {self.name} has no window buffer '{name}' (it has: {known})")

    def view(
        self, name: str, device: int, shape: Sequence[int], dtype: DataType
    ) -> npt.NDArray[np.generic]:
        """Buffer ``name`` of ``device`` read as a packed ``shape`` tensor of ``dtype``."""
        return window_tensor(self.buffer(name, device), shape, dtype).view

    def contents(self, name: str) -> npt.NDArray[np.generic]:
        """Buffer ``name`` as the program declared it, every member's: ``[members, count]`` of
        its element type (bytes for a buffer declared in bytes), members in ``devices`` order."""
        layout = self._layout(name)
        size = layout.count * layout.element.itemsize
        return stack(
            [
                window[layout.offset : layout.offset + size].view(layout.element)
                for window in self.windows
            ]
        )

    def _member(self, device: int) -> int:
        try:
            return self.devices.index(device)
        except ValueError:
            raise KeyError(f"device {device} is not a member of domain {self.name}") from None


class SimDomain:
    """A live comm domain: the handle of each member, indexed by worker id."""

    def __init__(self, handles: Mapping[int, SimDomainHandle], name: str) -> None:
        self._handles = handles
        self.name = name

    def __getitem__(self, worker: int) -> SimDomainHandle:
        try:
            return self._handles[worker]
        except KeyError:
            members = ", ".join(str(d) for d in self._handles)
            raise KeyError(
                f"worker {worker} is not a member of comm domain {self.name} ({members})"
            ) from None


class SimOrchestrator:
    """What a HOST orchestrator's entry receives as ``orch``, running on ``world``."""

    def __init__(self, world: World) -> None:
        self.world = world
        #: The domains whose ``with`` blocks have ended, in that order.
        self.snapshots: list[DomainSnapshot] = []

    @property
    def _worker(self) -> SimOrchestrator:
        """What pypto's ``make_tensor_arg(orch._worker, ...)`` is handed (here: nothing needed)."""
        return self

    @contextlib.contextmanager
    def allocate_domain(
        self,
        *,
        name: str,
        workers: Sequence[int],
        window_size: int,
        buffers: Sequence[CommBufferSpec] = (),
        memory: Segment | None = None,
    ) -> Iterator[SimDomain]:
        members = tuple(workers)
        if not members or len(set(members)) != len(members):
            raise ValueError(f"comm domain {name} needs distinct workers, got {list(members)}")
        for worker in members:
            if not 0 <= worker < self.world.nranks:
                raise ValueError(
                    f"comm domain {name}: worker {worker} is not a rank of this run "
                    f"(0..{self.world.nranks - 1})"
                )
        layouts = layout_buffers(buffers, window_size)
        native = self.world.create_domain(len(members), window_size, memory)
        handles: dict[int, SimDomainHandle] = {}
        for rank, worker in enumerate(members):
            window = native.window(rank)
            handles[worker] = SimDomainHandle(
                name=name,
                domain_rank=rank,
                domain_size=len(members),
                device_ctx=native.contexts[rank],
                buffers={
                    layout.name: SimDomainBuffer(
                        window[layout.offset : layout.offset + layout.nbytes]
                    )
                    for layout in layouts
                },
            )
        try:
            yield SimDomain(handles, name)
            self.world.fence()
        finally:
            self.world.quiesce()  # no dispatch may still use the windows (unless abandoned)
            windows = tuple(native.window(rank) for rank in range(len(members)))
            if self.world.abandoned:  # threads may still write them: keep what they held now
                windows = tuple(window.copy() for window in windows)
            self.snapshots.append(DomainSnapshot(name, members, layouts, windows))
            self.world.release_domain(native)

    def submit_next_level(
        self, next_level: SimNextLevel, args: TaskArgs, config: CallConfig, *, worker: int
    ) -> None:
        if not isinstance(next_level, SimNextLevel):
            raise TypeError(f"{next_level!r} is not a chip callable of this simulation")
        tensors = [tensor for tensor, _ in args.tensors]
        dispatch = Dispatch(
            next_level.name,
            next_level.native,
            tuple(tensor.describe(self.world.runtime) for tensor in tensors),
            tuple(scalar_bits(value) for value in args.scalars),
            memory=tuple(tensors),
        )
        self.world.submit(worker, dispatch)


def submit_chip(
    orch: SimOrchestrator,
    next_level: SimNextLevel,
    args: TaskArgs,
    config: CallConfig,
    worker: int | None,
) -> None:
    """pypto's ``_submit_chip``: a chip dispatch to ``worker`` (every dispatch a generated
    orchestrator makes names its worker)."""
    if worker is None:
        raise ValueError(f"a dispatch of {next_level.name} names no worker")
    orch.submit_next_level(next_level, args, config, worker=worker)
