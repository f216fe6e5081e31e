"""Memory a simulated run can share with another process, and messages that carry it by reference.

A run's windows and large tensors are tens of megabytes. Pickled through a pipe to a simulation
worker and back (:mod:`.isolation`), each crossing costs several copies of every byte (into the
pickle, through the pipe, out of it, into a new array); an exchange that moves the same bytes
once takes a fraction of that. So the memory of windows is a :class:`Segment`: a ``memfd`` mapped
shared, zero-filled by the kernel as its pages are first touched (no pass of our own zeroes it),
whose descriptor another process maps to see the same bytes.

:func:`send` and :func:`receive` exchange picklable objects over a Unix stream socket. A NumPy
array that views a segment travels as a reference (the segment, passed as a descriptor with the
message, and the view's offset, shape and strides), a segment itself as the descriptor; another
large array is copied once into a
fresh segment and travels the same way. The receiver's arrays view the shared memory: nothing is
copied on its side, and a segment it already maps (one it sent, coming back) is not mapped twice.
"""

from __future__ import annotations

import ctypes
import io
import mmap
import os
import pickle
import socket
import struct
import threading
import weakref
from collections.abc import Sequence
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

#: Arrays at least this large cross a process boundary as shared memory, smaller ones in-band.
SHARE_BYTES = 1 << 16
#: Descriptors one message may carry (the kernel's SCM_MAX_FD is 253); arrays beyond go in-band.
_MAX_FDS = 250
#: A message's header: the pickle's length and the number of descriptors sent with it.
_HEADER = struct.Struct("<QI")

#: Bytes, and number, of idle mappings a process keeps for reuse (each holds a descriptor): at
#: least IDLE_BYTES, and up to the most its segments held at once (see :class:`_Idle`).
IDLE_BYTES = 256 << 20
IDLE_COUNT = 64


class _Mapping:
    """A memfd mapped shared into this process: what a :class:`Segment` holds."""

    def __init__(self, fd: int, owned: bool) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.inode = os.fstat(fd).st_ino
        #: Created by this process (else received from another).
        self.owned = owned
        #: Sent to another process that may keep it: never reused for new contents.
        self.given = False
        self.memory = mmap.mmap(fd, self.size, flags=mmap.MAP_SHARED)
        self.address = int(np.frombuffer(self.memory, np.uint8, count=1).ctypes.data)

    def close(self) -> None:
        self.memory.close()
        os.close(self.fd)


class _Idle:
    """Mappings no segment holds, kept to be held again: a fresh page costs a fault (and on a
    virtual machine often the host's as well), many times a pass over a warm one. A mapping this
    process created and never gave away may hold new contents; one received from another process
    is only mapped again when it comes back (its pages stay mapped).

    The idle bytes kept are bounded by :data:`IDLE_BYTES` or by the most that segments held at
    once in this process, whichever is larger: a run whose windows alone are larger than the
    fixed bound (32 ranks at a MiB per peer: 2 GiB) would otherwise fault in all of them on
    every run, about ten times a pass over warm memory. Keeping what a process once held at once
    raises no peak of its memory; it only does not hand it back."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # a segment may die, and come back here, anywhere
        self._mappings: dict[int, _Mapping] = {}  # by inode, oldest first
        self._bytes = 0
        self._held = 0  # bytes of the mappings segments hold now
        self._most_held = 0

    def hold(self, mapping: _Mapping) -> None:
        """A segment holds ``mapping`` now."""
        with self._lock:
            self._held += mapping.size
            self._most_held = max(self._most_held, self._held)

    def put(self, mapping: _Mapping) -> None:
        with self._lock:
            self._held -= mapping.size
        if mapping.given:
            mapping.close()
            return
        with self._lock:
            self._mappings[mapping.inode] = mapping
            self._bytes += mapping.size
            limit = max(IDLE_BYTES, self._most_held)
            while self._bytes > limit or len(self._mappings) > IDLE_COUNT:
                self._remove(next(iter(self._mappings))).close()

    def take(self, inode: int) -> _Mapping | None:
        with self._lock:
            return self._remove(inode) if inode in self._mappings else None

    def take_size(self, size: int) -> _Mapping | None:
        """The most recently idle mapping of exactly ``size`` bytes that may be reused."""
        with self._lock:
            for mapping in reversed(self._mappings.values()):
                if mapping.owned and mapping.size == size:
                    return self._remove(mapping.inode)
        return None

    def _remove(self, inode: int) -> _Mapping:
        mapping = self._mappings.pop(inode)
        self._bytes -= mapping.size
        return mapping


_IDLE = _Idle()
#: The segments alive in this process, by the memfd's inode: one per memfd.
_LIVE: weakref.WeakValueDictionary[int, Segment] = weakref.WeakValueDictionary()


class Segment:
    """Shared memory: a memfd, mapped. Arrays view it through :meth:`array`, which keep it
    alive; when the last goes, its mapping waits in this process's idle mappings for reuse."""

    def __init__(self, mapping: _Mapping) -> None:
        _IDLE.hold(mapping)
        self._mapping = mapping
        self.fd = mapping.fd
        self.inode = mapping.inode
        self.address = mapping.address
        _LIVE[self.inode] = self

    @classmethod
    def allocate(cls, size: int, *, zeroed: bool = True) -> Segment:
        """``size`` bytes, zero-filled unless not ``zeroed`` (then of any contents): an idle
        mapping of that size, else a new memfd, which the kernel zero-fills as pages are first
        touched."""
        if size <= 0:
            raise ValueError(f"a shared segment has a positive size, got {size}")
        mapping = _IDLE.take_size(size)
        if mapping is None:
            fd = os.memfd_create("pypto-sim", os.MFD_CLOEXEC)
            try:
                os.ftruncate(fd, size)
                mapping = _Mapping(fd, owned=True)
            except (OSError, ValueError):
                os.close(fd)
                raise
        elif zeroed:
            ctypes.memset(mapping.address, 0, size)
        return cls(mapping)

    @classmethod
    def adopt(cls, fd: int) -> Segment:
        """The segment of memfd ``fd``, received from another process (``fd`` is closed here):
        the one alive in this process, else its idle mapping, else a new mapping."""
        inode = os.fstat(fd).st_ino
        live = _LIVE.get(inode)
        if live is not None:
            os.close(fd)
            return live
        mapping = _IDLE.take(inode)
        if mapping is not None:
            os.close(fd)
            return cls(mapping)
        try:
            return cls(_Mapping(fd, owned=False))
        except (OSError, ValueError):
            os.close(fd)
            raise

    def give(self) -> None:
        """Another process may keep this memory: if this process created it, never reuse it
        for new contents (memory received from another process never is)."""
        self._mapping.given = self._mapping.owned

    def __len__(self) -> int:
        return self._mapping.size

    def zero(self, offset: int, size: int) -> None:
        """Write zeros over bytes ``[offset, offset + size)``: one ``memset``, which runs at the
        memory's write speed (a NumPy assignment of 0 to bytes takes half as long again)."""
        if offset < 0 or size < 0 or offset + size > len(self):
            raise ValueError(
                f"bytes [{offset}, {offset + size}) do not fit in a {len(self)}-byte segment"
            )
        ctypes.memset(self.address + offset, 0, size)

    def __del__(self) -> None:
        _IDLE.put(self._mapping)

    def array(
        self,
        shape: tuple[int, ...],
        dtype: npt.DTypeLike,
        offset: int = 0,
        strides: tuple[int, ...] | None = None,
    ) -> npt.NDArray[Any]:
        """A writable view of the segment (it keeps the segment alive); it must lie inside."""
        element = np.dtype(dtype)
        shape = tuple(int(d) for d in shape)
        if strides is None:
            strides = _row_major(shape, element.itemsize)
        strides = tuple(int(s) for s in strides)
        low = high = offset
        if 0 not in shape:
            for extent, stride in zip(shape, strides, strict=True):
                reach = (extent - 1) * stride
                low, high = (low + reach, high) if reach < 0 else (low, high + reach)
            high += element.itemsize
        if low < 0 or high > len(self):
            raise ValueError(
                f"a view of bytes [{low}, {high}) does not fit in a {len(self)}-byte segment"
            )
        return np.asarray(_View(self, shape, element, self.address + offset, strides))


class _View:
    """What :meth:`Segment.array` wraps: NumPy's array interface over the segment, and the
    segment as ``base``, so the array keeps it alive and :func:`segment_of` finds it."""

    def __init__(
        self,
        base: Segment,
        shape: tuple[int, ...],
        dtype: np.dtype[Any],
        address: int,
        strides: tuple[int, ...],
    ) -> None:
        self.base = base
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": dtype.str,
            "descr": dtype.descr,
            "data": (address, False),
            "strides": strides,
        }


def _row_major(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides: list[int] = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(1, extent)
    return tuple(reversed(strides))


def segment_of(array: npt.NDArray[Any]) -> Segment | None:
    """The segment ``array`` views, if any (through views of views, and through NumPy's
    ``as_strided``, whose array holds its source as ``base`` of an interface object)."""
    base: object = array
    while not isinstance(base, Segment):
        base = getattr(base, "base", None)
        if base is None:
            return None
    return base


def stack(views: Sequence[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """``numpy.stack(views)``, without a copy when the views are alike and evenly spaced in one
    segment (one buffer of every rank's window): then a view of it with a leading axis."""
    first = views[0]
    segment = segment_of(first)
    addresses = [int(view.ctypes.data) for view in views]
    step = addresses[1] - addresses[0] if len(views) > 1 else first.nbytes
    alike = all(
        view.shape == first.shape
        and view.strides == first.strides
        and view.dtype == first.dtype
        and segment_of(view) is segment
        and address == addresses[0] + index * step
        for index, (view, address) in enumerate(zip(views, addresses, strict=True))
    )
    if segment is None or not alike or step <= 0:
        return np.stack(views)
    offset = addresses[0] - segment.address
    return segment.array((len(views), *first.shape), first.dtype, offset, (step, *first.strides))


class _Pickler(pickle.Pickler):
    """Pickles large arrays as references to segments (see the module), collecting them."""

    def __init__(self, file: BinaryIO, returned: bool) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._returned = returned
        self.segments: list[Segment] = []
        self._index: dict[int, int] = {}
        self._copied: dict[int, tuple[object, ...]] = {}
        self._keep: list[object] = []  # the copied arrays, so that no id is reused meanwhile

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Segment):
            return (self._include(obj),)
        if type(obj) is not np.ndarray or obj.dtype.hasobject:
            return None
        copied = self._copied.get(id(obj))
        if copied is not None:
            return copied
        segment = segment_of(obj)
        if segment is None and obj.nbytes < SHARE_BYTES:
            return None
        known = segment is not None and segment.inode in self._index
        if not known and len(self.segments) >= _MAX_FDS:
            return None
        original = obj
        if segment is None:
            segment = Segment.allocate(obj.nbytes, zeroed=False)
            obj = segment.array(obj.shape, obj.dtype)
            obj[...] = original
        index = self._include(segment)
        pid = (index, obj.dtype, obj.shape, obj.strides, int(obj.ctypes.data) - segment.address)
        if obj is not original:  # pickle looks here before its memo: copy each array once
            self._copied[id(original)] = pid
            self._keep.append(original)
        return pid

    def _include(self, segment: Segment) -> int:
        """The index of ``segment`` among the message's descriptors."""
        index = self._index.setdefault(segment.inode, len(self.segments))
        if index == len(self.segments):
            self.segments.append(segment)
            if not self._returned:
                segment.give()
        return index


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: BinaryIO, segments: list[Segment]) -> None:
        super().__init__(file)
        self._segments = segments
        self._arrays: dict[tuple[object, ...], npt.NDArray[Any]] = {}

    def persistent_load(self, pid: Any) -> Any:
        if len(pid) == 1:  # a whole segment
            return self._segments[pid[0]]
        # One array per reference, as one array was pickled.
        array = self._arrays.get(pid)
        if array is None:
            index, dtype, shape, strides, offset = pid
            array = self._arrays[pid] = self._segments[index].array(shape, dtype, offset, strides)
        return array


def send(sock: socket.socket, obj: object, *, returned: bool) -> list[Segment]:
    """Send ``obj`` (see the module): a header with the descriptors, then the pickle; the
    segments it went in, which the caller keeps until the reply when ``returned`` (the copies
    made for it have no other owner here, and a segment nothing holds is reused while the
    receiver still reads it).
    ``returned``: the receiver is done with the shared memory of ``obj`` once it replies (a
    request), so this process may fill it anew afterwards; else (a reply) the receiver may keep
    it, and memory this process created for it is never reused here."""
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, returned)
    pickler.dump(obj)
    data = buffer.getbuffer()
    header = _HEADER.pack(len(data), len(pickler.segments))
    if pickler.segments:
        socket.send_fds(sock, [header], [segment.fd for segment in pickler.segments])
    else:
        sock.sendall(header)
    sock.sendall(data)
    return pickler.segments


def receive(sock: socket.socket) -> Any:
    """The next object :func:`send` sent on ``sock``; EOFError when the peer has closed it."""
    header, fds, _, _ = socket.recv_fds(sock, _HEADER.size, _MAX_FDS, socket.MSG_CMSG_CLOEXEC)
    segments = [Segment.adopt(fd) for fd in fds]
    if not header:
        raise EOFError("the peer closed the connection")
    header += _receive_exactly(sock, _HEADER.size - len(header))
    length, count = _HEADER.unpack(header)
    if count != len(segments):
        raise EOFError(f"a message announced {count} shared segments and carried {len(segments)}")
    return _Unpickler(io.BytesIO(_receive_exactly(sock, length)), segments).load()


def _receive_exactly(sock: socket.socket, length: int) -> bytes:
    data = bytearray(length)
    view = memoryview(data)
    while view:
        count = sock.recv_into(view)
        if count == 0:
            raise EOFError("the peer closed the connection in the middle of a message")
        view = view[count:]
    return bytes(data)
