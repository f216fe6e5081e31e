"""Any backend of the store, read-only: what a remote marked ``remote-cache-read-only`` (or the
fallback remote, another branch's cache) is to the compile cache's remote tier."""

from __future__ import annotations

from pypto_build.store.storage import Storage


class ReadOnly:
    """``storage`` for reading: :meth:`put` stores nothing, and :attr:`writable` says so."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    @property
    def writable(self) -> bool:
        return False

    def get(
        self, name: str, *, limit: int | None = None, sha256: str | None = None
    ) -> bytes | None:
        return self._storage.get(name, limit=limit, sha256=sha256)

    def put(self, name: str, data: bytes) -> None:
        """Nothing: a read-only storage takes no values."""
