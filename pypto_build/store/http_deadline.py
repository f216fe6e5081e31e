"""One deadline over a whole HTTP exchange with a remote cache.

urllib3's timeouts bound each system call: connecting, and each read of the socket. A server
that sends one byte of its status line, headers, body or answer to an upload every second
never lets one read time out, and so holds a build for as long as it likes. An exchange is
therefore run inside a :class:`Deadline`: every connection the exchange's thread uses is
watched, and when the deadline passes its socket is shut down, which ends whatever read or
write is blocked on it at once (for plain and TLS sockets alike). The exchange then fails with
an ordinary transport error that its caller reports as the remote taking too long.

The connections are urllib3's own, through pool classes whose connections tell the current
deadline which socket to watch (:func:`pool_manager`); a thread not inside a deadline is not
watched.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import urllib3


class Deadline:
    """A bound of ``seconds`` on everything the calling thread does with its connections
    between entering and leaving the block; :attr:`expired` says whether it passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.expired = False
        self._lock = threading.Lock()
        self._done = False
        self._connections: list[Any] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def remaining(self) -> float:
        """Seconds left, never less than a millisecond (a socket timeout of 0 means
        non-blocking)."""
        return max(self.at - time.monotonic(), 0.001)

    def watch(self, connection: Any) -> None:
        """Shut ``connection``'s socket down when the deadline passes (at once if it has)."""
        with self._lock:
            self._connections.append(connection)
            if self.expired:
                _shut_down(connection)

    def _expire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for connection in self._connections:
                _shut_down(connection)

    def __enter__(self) -> Deadline:
        _current.deadline = self
        self._timer.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()
        _current.deadline = None


def _shut_down(connection: Any) -> None:
    """End every blocked read and write on the connection's socket; the connection is then
    closed by urllib3 as broken, never reused."""
    sock = getattr(connection, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _Current(threading.local):
    deadline: Deadline | None = None


_current = _Current()


def pool_manager(*, num_pools: int, maxsize: int) -> urllib3.PoolManager:
    """A urllib3 pool manager whose connections are watched by the calling thread's
    :class:`Deadline` from the moment they connect (the TLS handshake included) and for every
    request sent on them."""
    import urllib3
    from urllib3.connection import HTTPConnection, HTTPSConnection

    class _Watched:
        def connect(self) -> None:
            _watch(self)
            super().connect()  # type: ignore[misc]

        def request(self, *args: Any, **kwargs: Any) -> None:
            _watch(self)
            super().request(*args, **kwargs)  # type: ignore[misc]

    class _HTTPConnection(_Watched, HTTPConnection):
        pass

    class _HTTPSConnection(_Watched, HTTPSConnection):
        pass

    class _HTTPPool(urllib3.HTTPConnectionPool):
        ConnectionCls = _HTTPConnection

    class _HTTPSPool(urllib3.HTTPSConnectionPool):
        ConnectionCls = _HTTPSConnection

    manager = urllib3.PoolManager(num_pools=num_pools, maxsize=maxsize, block=False)
    manager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
    return manager


def _watch(connection: Any) -> None:
    deadline = _current.deadline
    if deadline is not None:
        deadline.watch(connection)
