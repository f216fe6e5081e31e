"""The interface of the store's backends, and what they raise.

In the shape of sccache's ``Storage`` trait
(https://github.com/mozilla/sccache/blob/00fd51aa0310b8ed186d25361bf52866d59c6691/src/cache/cache.rs):
``get`` a value by name (a miss is no value, not an error), ``put`` one, and whether it
takes values at all. What sccache's trait also asks (where the storage is, how much it holds)
is each backend's own: a folder knows its size (:mod:`.disk`), a remote server does not say.
Names are relative POSIX paths chosen by the client (the
compile cache's remote tier names ``ac/<key>`` and ``cas/<sha256>``, the build records
``records/<key>.json`` and ``blobs/<sha[:2]>/<sha>``), so one client can use any backend.
"""

from __future__ import annotations

from typing import Protocol

from pypto_build.errors import PyptoError


class Damaged(PyptoError):
    """A value, entry or record the store could not have written (a killed write's half, a
    flipped bit, something planted): its reader treats it as a miss, says so once, and
    rebuilds. The one such type of every backend and client."""


class Unavailable(PyptoError):
    """The storage cannot be used at all (a folder that is a file or read-only, a lock that
    cannot be opened, a server that does not answer as a cache answers): the build goes on
    without it, with one warning."""


class Storage(Protocol):
    """What every backend offers (see the module)."""

    @property
    def writable(self) -> bool:
        """Whether :meth:`put` stores anything."""
        ...

    def get(
        self, name: str, *, limit: int | None = None, sha256: str | None = None
    ) -> bytes | None:
        """The value ``name``, or None when there is none. A value of more than ``limit``
        bytes (when given), or one that does not hash to ``sha256`` when that is given, is
        :class:`Damaged`; a storage that cannot be asked is :class:`Unavailable`."""
        ...

    def put(self, name: str, data: bytes) -> None:
        """Store ``data`` as ``name``, atomically: a reader sees the old value or the new."""
        ...
