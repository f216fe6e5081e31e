"""What the compile cache holds and did, and pruning it.

``pypto-build cache stats`` shows the entries' count and size and the last recorded build's
hits and misses (``last-build.json``); ``prune`` evicts the least recently used entries (by
their manifests' modification time, which a hit refreshes) until the entries fit a size bound,
and drops the staging folders of killed builds. Both hold the prune lock, so builds that
finish at once prune one after another, and a build reading an entry being pruned finds it
whole or not at all (an entry is renamed out before it is removed).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from pypto_build.chip_build.compile_cache.layout import LAST_BUILD, LAYOUT, LAYOUT_NAME, MANIFEST
from pypto_build.files import atomic_write_text, read_regular
from pypto_build.store.disk import DiskStorage, StoredEntry, evict, real_subdirs
from pypto_build.store.storage import Unavailable


@dataclass(frozen=True)
class BuildCounts:
    """Cache hits and misses of one build; ``remote_hits`` of the hits came from the remote."""

    hits: int
    misses: int
    remote_hits: int = 0


@dataclass(frozen=True)
class CacheStats:
    """What ``pypto-build cache stats`` shows."""

    root: Path
    entries: int
    size: int
    #: The last recorded build's counts, if a build recorded them.
    last_build: BuildCounts | None


@dataclass(frozen=True)
class PruneResult:
    """What ``pypto-build cache prune`` removed and what is left."""

    removed_entries: int
    removed_bytes: int
    remaining_entries: int
    remaining_bytes: int


class CacheUsage:
    """The statistics and pruning of the compile cache in ``storage`` (see the module)."""

    def __init__(self, storage: DiskStorage, lock_timeout: float) -> None:
        self._storage = storage
        self._lock_timeout = lock_timeout

    def record_build(self, counts: BuildCounts) -> None:
        """Remember a build's hits and misses for :meth:`stats` (silently not, when the cache
        cannot be written: the build itself has succeeded)."""
        document = {
            "hits": counts.hits,
            "misses": counts.misses,
            "remote_hits": counts.remote_hits,
        }
        with contextlib.suppress(OSError, Unavailable):
            atomic_write_text(
                self._storage.usable_folder() / LAST_BUILD,
                json.dumps(document, sort_keys=True) + "\n",
            )

    def stats(self) -> CacheStats:
        """Entry count, total size and the last recorded build's counts."""
        entries = self._entries()
        return CacheStats(
            root=self._storage.root,
            entries=len(entries),
            size=sum(entry.size for entry in entries),
            last_build=self._last_build(),
        )

    def _last_build(self) -> BuildCounts | None:
        try:
            document = json.loads(
                read_regular(self._storage.base / LAST_BUILD, follow_symlinks=False)
            )
            return BuildCounts(
                hits=int(document["hits"]),
                misses=int(document["misses"]),
                remote_hits=int(document.get("remote_hits", 0)),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def prune(self, max_size: int) -> PruneResult:
        """Evict least recently used entries until the entries total at most ``max_size``
        bytes (0 empties the cache); also drops the staging folders of killed builds (raises
        :class:`OSError` when the cache cannot be written)."""
        storage = self._storage
        try:
            lock = storage.lock(storage.usable_folder("locks") / "prune.lock", self._lock_timeout)
        except Unavailable as trouble:
            raise OSError(f"compile cache {storage.root} is unusable ({trouble})") from None
        with lock:
            entries = self._entries()
            removed, total = evict(entries, max_size, self._remove)
            storage.remove_killed_staging()
            if max_size == 0:
                self._remove_older_layouts()
        return PruneResult(
            removed_entries=len(removed),
            removed_bytes=sum(entry.size for entry in removed),
            remaining_entries=len(entries) - len(removed),
            remaining_bytes=total,
        )

    def _entries(self) -> list[StoredEntry]:
        """Every entry folder, found without following a link (a link is not an entry)."""
        return self._storage.entries("entries", 3, MANIFEST)

    def _remove(self, entry: StoredEntry) -> None:
        self._storage.remove(entry.path)
        with contextlib.suppress(OSError):  # only if no other entry shares the key
            entry.path.parent.rmdir()
            entry.path.parent.parent.rmdir()  # and none the key's first two digits

    def _remove_older_layouts(self) -> None:
        """Remove the folders of other layouts (``v1`` beside ``v2``): no build of this version
        reads them, and emptying the cache must free what an older version left."""
        for folder in real_subdirs(self._storage.root, depth=1):
            if LAYOUT_NAME.fullmatch(folder.name) and folder.name != LAYOUT:
                shutil.rmtree(folder, ignore_errors=True)
