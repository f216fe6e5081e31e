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

import io
import mmap
import os
import pickle
import socket
import struct
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

#: The segments this process maps, by the memfd's inode: one mapping per segment.
_MAPPED: weakref.WeakValueDictionary[int, Segment] = weakref.WeakValueDictionary()


class Segment(mmap.mmap):
    """Shared, zero-filled memory: ``size`` bytes of a new ``memfd``, or the memfd ``fd`` (which
    the segment then owns) as another process created it."""

    fd: int
    inode: int
    address: int

    def __new__(cls, size: int = 0, *, fd: int | None = None) -> Segment:
        if fd is None:
            if size <= 0:
                raise ValueError(f"a shared segment has a positive size, got {size}")
            fd = os.memfd_create("pypto-sim", os.MFD_CLOEXEC)
            try:
                os.ftruncate(fd, size)
            except OSError:
                os.close(fd)
                raise
        else:
            size = os.fstat(fd).st_size
        try:
            self = super().__new__(cls, fd, size, flags=mmap.MAP_SHARED)
        except (OSError, ValueError):
            os.close(fd)
            raise
        self.fd = fd
        self.inode = os.fstat(fd).st_ino
        weakref.finalize(self, os.close, fd)
        self.address = int(np.frombuffer(self, np.uint8, count=1).ctypes.data)
        _MAPPED[self.inode] = self
        return self

    @classmethod
    def adopt(cls, fd: int) -> Segment:
        """The segment of memfd ``fd`` (received from another process; closed here): this
        process's existing mapping of it, else a new one."""
        mapped = _MAPPED.get(os.fstat(fd).st_ino)
        if mapped is not None:
            os.close(fd)
            return mapped
        return cls(fd=fd)

    def array(
        self,
        shape: tuple[int, ...],
        dtype: npt.DTypeLike,
        offset: int = 0,
        strides: tuple[int, ...] | None = None,
    ) -> npt.NDArray[Any]:
        """A writable view of the segment (it keeps the segment alive)."""
        return np.ndarray(shape, dtype, buffer=self, offset=offset, strides=strides)


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

    def __init__(self, file: BinaryIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
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
            segment = Segment(obj.nbytes)
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


def send(sock: socket.socket, obj: object) -> None:
    """Send ``obj`` (see the module): a header with the descriptors, then the pickle."""
    buffer = io.BytesIO()
    pickler = _Pickler(buffer)
    pickler.dump(obj)
    data = buffer.getbuffer()
    header = _HEADER.pack(len(data), len(pickler.segments))
    if pickler.segments:
        socket.send_fds(sock, [header], [segment.fd for segment in pickler.segments])
    else:
        sock.sendall(header)
    sock.sendall(data)


def receive(sock: socket.socket) -> Any:
    """The next object :func:`send` sent on ``sock``; EOFError when the peer has closed it."""
    header, fds, _, _ = socket.recv_fds(sock, _HEADER.size, _MAX_FDS)
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
