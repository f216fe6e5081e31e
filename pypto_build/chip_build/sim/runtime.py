"""The ctypes binding of the simulation runtime library (``runtime/sim_runtime.h``).

The library is loaded with ``RTLD_GLOBAL`` because the kernels and orchestrations it loads leave
the runtime's functions (``rt_submit_aiv_task``, ``pypto_sim_report_error``, ...) undefined and
bind them at load time; one library serves the whole process (:func:`load_runtime`). Every
foreign call releases the GIL, so ranks calling :meth:`NativeRuntime.execute` from their own
threads run concurrently.

Structures are never mirrored in Python: descriptors and comm contexts are filled by the library
into buffers of the sizes it reports, so the ABI has one definition, the C++ headers.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.sim.library import LIBRARY_NAME, runtime_library
from pypto_build.chip_build.sim.shared import Segment
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.errors import PyptoError
from pypto_build.store.location import default_cache_dir

#: The interface version this binding is written for (PYPTO_SIM_API_VERSION).
API_VERSION = 4
#: Status of a run refused before its orchestration started (PYPTO_SIM_RUN_REFUSED).
RUN_REFUSED = -1
#: The code of a kernel or orchestration that threw a C++ exception, raised a fatal signal or
#: called exit() (PYPTO_SIM_KERNEL_CRASHED).
KERNEL_CRASHED = -2
#: The code of a task whose access no dependency of PyPTO's runtime orders after an earlier
#: task's conflicting one: a race there (PYPTO_SIM_UNORDERED_ACCESS).
UNORDERED_ACCESS = -3
#: Alignment of descriptor buffers (ChipTensor is alignas(64)), and of windows (cache lines).
_DESCRIPTOR_ALIGNMENT = WINDOW_LINE = 64
_ERROR_BUFFER = 4096

_CORE_TYPE_CODES = {CoreType.AIV: 0, CoreType.AIC: 1}

_P = ctypes.c_void_p
_U8, _U32, _U64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64
_I32 = ctypes.c_int32
_STR = ctypes.c_char_p
_SIZE = ctypes.c_size_t

#: Every function of the interface: (result type, argument types).
_SIGNATURES: dict[str, tuple[object, tuple[object, ...]]] = {
    "pypto_sim_api_version": (_I32, ()),
    "pypto_sim_abi_size": (_U64, (_I32,)),
    "pypto_sim_set_timeouts": (None, (_U64, _U64)),
    "pypto_sim_progress": (_U64, ()),
    "pypto_sim_pool_threads": (_U32, (ctypes.POINTER(_U32),)),
    "pypto_sim_stream_fill": (None, (_P, _P, _U64)),
    "pypto_sim_describe_tensor": (
        None,
        (_P, _U64, _U64, _U64, _U8, _U32, ctypes.POINTER(_U32), ctypes.POINTER(_U32)),
    ),
    "pypto_sim_domain_create": (_P, (_U32, _U64, ctypes.POINTER(_U64), _STR, _SIZE)),
    "pypto_sim_domain_window_bytes": (_U64, (_P,)),
    "pypto_sim_domain_window": (_U64, (_P, _U32)),
    "pypto_sim_domain_context": (_U64, (_P, _U32)),
    "pypto_sim_domain_destroy": (None, (_P,)),
    "pypto_sim_callable_load": (
        _P,
        (
            _STR,
            _STR,
            _I32,
            ctypes.POINTER(_I32),
            ctypes.POINTER(_I32),
            ctypes.POINTER(_STR),
            ctypes.POINTER(_STR),
            _STR,
            _SIZE,
        ),
    ),
    "pypto_sim_callable_unload": (None, (_P,)),
    "pypto_sim_run_create": (_P, (_I32, _STR, _I32, _I32)),
    "pypto_sim_run_execute": (_I32, (_P, _P, ctypes.POINTER(_P), _I32, ctypes.POINTER(_U64), _I32)),
    "pypto_sim_run_code": (_I32, (_P,)),
    "pypto_sim_run_message": (_STR, (_P,)),
    "pypto_sim_run_task_count": (_I32, (_P,)),
    "pypto_sim_run_log_count": (_I32, (_P,)),
    "pypto_sim_run_log_line": (_STR, (_P, _I32)),
    "pypto_sim_run_abandoned": (_I32, (_P,)),
    "pypto_sim_run_destroy": (None, (_P,)),
    "pypto_sim_report_crashes": (_I32, (_I32,)),
}


class RuntimeLoadError(PyptoError, RuntimeError):
    """The runtime library, a kernel or an orchestration could not be loaded."""


@dataclass(frozen=True)
class AbiSizes:
    """Sizes of the ABI structures as the library was compiled (kernel_abi.h pins them)."""

    chip_tensor: int
    comm_context: int
    local_context: int
    chip_task_args: int


@dataclass(frozen=True)
class KernelBinary:
    """One kernel of a callable: its ``func_id``, name, core type and shared object."""

    func_id: int
    name: str
    core_type: CoreType
    path: Path


@dataclass(frozen=True)
class RunOutcome:
    """What one orchestration run on one rank did."""

    #: 0, the first latched error code (5, 7, 100, ...) or :data:`RUN_REFUSED`.
    code: int
    #: The message of that error ("" when the run succeeded).
    message: str
    #: Kernel tasks the run started.
    tasks: int
    #: Timing lines and every reported error, in order.
    log: tuple[str, ...]
    #: Whether a task was abandoned with block threads still running.
    abandoned: bool


class Descriptor:
    """A ``ChipTensor`` filled by the library, in a 64-byte aligned buffer owned here."""

    def __init__(self, size: int) -> None:
        self._storage = np.zeros(size + _DESCRIPTOR_ALIGNMENT, dtype=np.uint8)
        base = int(self._storage.ctypes.data)
        #: The descriptor's address, passed as a tensor argument.
        self.address = base + (-base % _DESCRIPTOR_ALIGNMENT)


def window_stride(window_bytes: int) -> int:
    """The bytes of every window of a domain of ``window_bytes``: rounded up to whole cache
    lines (at least one), so every window starts on a line of its own."""
    return max(1, -(-window_bytes // WINDOW_LINE)) * WINDOW_LINE


class NativeDomain:
    """A comm domain of the library: each rank's window and ``CommContext``. The windows are
    ``memory``, one after another (:func:`window_stride` bytes each); the domain only points
    into it, so its contents outlive the domain."""

    def __init__(self, lib: ctypes.CDLL, handle: int, memory: Segment, nranks: int) -> None:
        self._lib = lib
        self._handle: int | None = handle
        self.memory = memory
        #: The size of every window.
        self.window_bytes = int(lib.pypto_sim_domain_window_bytes(handle))
        self.windows = tuple(int(lib.pypto_sim_domain_window(handle, r)) for r in range(nranks))
        self.contexts = tuple(int(lib.pypto_sim_domain_context(handle, r)) for r in range(nranks))

    def window(self, rank: int) -> npt.NDArray[np.uint8]:
        """Rank ``rank``'s window as bytes: a view of :attr:`memory`."""
        return self.memory.array((self.window_bytes,), np.uint8, rank * self.window_bytes)

    def close(self) -> None:
        """Free the domain (not its memory, which its views keep)."""
        if self._handle is not None:
            self._lib.pypto_sim_domain_destroy(self._handle)
            self._handle = None


class NativeCallable:
    """A loaded chip sub-build: its orchestration and kernels."""

    def __init__(self, lib: ctypes.CDLL, handle: int) -> None:
        self._lib = lib
        self.handle: int | None = handle

    def close(self) -> None:
        if self.handle is not None:
            self._lib.pypto_sim_callable_unload(self.handle)
            self.handle = None


class NativeRuntime:
    """The runtime library, loaded process-wide."""

    def __init__(self, library: Path) -> None:
        try:
            lib = ctypes.CDLL(str(library), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as exc:
            raise RuntimeLoadError(f"cannot load the simulation runtime {library}: {exc}") from exc
        for name, (restype, argtypes) in _SIGNATURES.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
        version = int(lib.pypto_sim_api_version())
        if version != API_VERSION:
            raise RuntimeLoadError(
                f"the simulation runtime {library} has interface version {version}, "
                f"expected {API_VERSION}"
            )
        self._lib = lib
        size = lib.pypto_sim_abi_size
        self.abi = AbiSizes(int(size(0)), int(size(1)), int(size(2)), int(size(3)))

    def set_timeouts(self, *, wait: float, task: float) -> None:
        """How long (seconds) one kernel signal wait may spin before it fails its task, and one
        task may run before its unreturned blocks are abandoned (both latch code 100)."""
        self._lib.pypto_sim_set_timeouts(_nanoseconds(wait), _nanoseconds(task))

    def progress(self) -> int:
        """Kernel block starts and returns so far in this process."""
        return int(self._lib.pypto_sim_progress())

    def pool_threads(self) -> tuple[int, int]:
        """The block threads the process's pool has started, and how many of them are idle."""
        idle = _U32(0)
        threads = int(self._lib.pypto_sim_pool_threads(ctypes.byref(idle)))
        return threads, int(idle.value)

    def stream_fill(self, address: int, source: int | None, nbytes: int) -> None:
        """Write ``nbytes`` at ``address``: a copy of the bytes at ``source``, or zeros when it
        is None, without reading the overwritten memory first (``pypto_sim_stream_fill``)."""
        self._lib.pypto_sim_stream_fill(address, source, nbytes)

    def describe(
        self,
        *,
        address: int,
        nbytes: int,
        start_offset: int,
        dtype: int,
        shape: Sequence[int],
        strides: Sequence[int],
    ) -> Descriptor:
        """A tensor descriptor of the view ``shape``/``strides`` (elements) at ``start_offset``
        elements into the buffer of ``nbytes`` bytes at ``address``."""
        descriptor = Descriptor(self.abi.chip_tensor)
        dims = ctypes.c_uint32 * max(1, len(shape))
        self._lib.pypto_sim_describe_tensor(
            descriptor.address,
            address,
            nbytes,
            start_offset,
            dtype,
            len(shape),
            dims(*shape),
            dims(*strides),
        )
        return descriptor

    def create_domain(
        self, nranks: int, window_bytes: int, memory: Segment | None = None
    ) -> NativeDomain:
        """A domain of ``nranks`` windows of :func:`window_stride` (``window_bytes``) bytes in
        ``memory`` (as it holds them: zeroed, or filled before any rank runs), or in new zeroed
        shared memory."""
        stride = window_stride(window_bytes)
        if memory is None:
            memory = Segment.allocate(nranks * stride)
        elif len(memory) < nranks * stride:
            raise ValueError(
                f"{nranks} windows of {stride} bytes do not fit in {len(memory)} bytes of memory"
            )
        bases = (_U64 * nranks)(*(memory.address + rank * stride for rank in range(nranks)))
        error = ctypes.create_string_buffer(_ERROR_BUFFER)
        handle = self._lib.pypto_sim_domain_create(nranks, stride, bases, error, _ERROR_BUFFER)
        if not handle:
            raise ValueError(error.value.decode("utf-8", errors="replace"))
        return NativeDomain(self._lib, int(handle), memory, nranks)

    def load_callable(
        self, orchestration: Path, entry: str, kernels: Sequence[KernelBinary]
    ) -> NativeCallable:
        count = len(kernels)
        error = ctypes.create_string_buffer(_ERROR_BUFFER)
        handle = self._lib.pypto_sim_callable_load(
            os.fsencode(orchestration),
            entry.encode(),
            count,
            (_I32 * count)(*(k.func_id for k in kernels)),
            (_I32 * count)(*(_CORE_TYPE_CODES[k.core_type] for k in kernels)),
            (_STR * count)(*(k.name.encode() for k in kernels)),
            (_STR * count)(*(os.fsencode(k.path) for k in kernels)),
            error,
            _ERROR_BUFFER,
        )
        if not handle:
            raise RuntimeLoadError(error.value.decode("utf-8", errors="replace"))
        return NativeCallable(self._lib, int(handle))

    def execute(
        self,
        callable_: NativeCallable,
        *,
        rank: int,
        next_level: str,
        tensors: Sequence[Descriptor],
        scalars: Sequence[int],
        aiv_capacity: int,
        aic_capacity: int,
    ) -> RunOutcome:
        """Run ``callable_`` (sub-build ``next_level``)'s orchestration for ``rank`` on this
        thread; scalars are 64-bit patterns (``0 <= value < 2**64``)."""
        lib = self._lib
        run = lib.pypto_sim_run_create(rank, next_level.encode(), aiv_capacity, aic_capacity)
        if not run:
            raise MemoryError("cannot allocate a simulated run")
        try:
            lib.pypto_sim_run_execute(
                run,
                callable_.handle,
                (_P * max(1, len(tensors)))(*(t.address for t in tensors)),
                len(tensors),
                (_U64 * max(1, len(scalars)))(*scalars),
                len(scalars),
            )
            log = tuple(
                _text(lib.pypto_sim_run_log_line(run, i))
                for i in range(int(lib.pypto_sim_run_log_count(run)))
            )
            return RunOutcome(
                code=int(lib.pypto_sim_run_code(run)),
                message=_text(lib.pypto_sim_run_message(run)),
                tasks=int(lib.pypto_sim_run_task_count(run)),
                log=log,
                abandoned=bool(lib.pypto_sim_run_abandoned(run)),
            )
        finally:
            lib.pypto_sim_run_destroy(run)

    def report_crashes(self, fd: int) -> None:
        """Before a fatal signal or ``exit()`` ends this process, write which rank, sub-build,
        kernel and block caused it to ``fd`` (``pypto_sim_report_crashes``): for a process that
        exists to run ranks, whose handlers of those signals this replaces."""
        error = int(self._lib.pypto_sim_report_crashes(fd))
        if error != 0:
            raise OSError(error, f"cannot install the crash report handlers: {os.strerror(error)}")


def _nanoseconds(seconds: float) -> int:
    return max(1, round(seconds * 1e9))


def _text(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8", errors="replace")


@functools.cache
def runtime_image() -> bytes:
    """The runtime library's bytes: built with the host compiler through the compile cache
    (``PYPTO_CACHE_DIR``) on first use. Once per process, so the runtime this process loads and
    the one its simulation workers load (:mod:`.isolation`) are the same library, whatever the
    environment says later."""
    cache = CompileCache(default_cache_dir())
    with runtime_library(cache, SimToolchain.discover()) as library:
        return library.read_bytes()


def load_image(image: bytes) -> NativeRuntime:
    """Load the runtime library ``image``: from an anonymous in-memory file, so nothing is
    left on disk and nothing needs removing (the loader needs a file; the image's mapping
    outlives the descriptor)."""
    fd = os.memfd_create(LIBRARY_NAME)
    try:
        with os.fdopen(os.dup(fd), "wb") as stream:
            stream.write(image)
        return NativeRuntime(Path(f"/proc/self/fd/{fd}"))
    finally:
        os.close(fd)


_loaded: list[NativeRuntime] = []
_loading = threading.Lock()


def load_runtime(image: bytes | None = None) -> NativeRuntime:
    """The process's runtime, loaded once: from ``image`` when given (a worker process loads the
    library its caller resolved), else from :func:`runtime_image`."""
    with _loading:
        if not _loaded:
            _loaded.append(load_image(runtime_image() if image is None else image))
        return _loaded[0]
