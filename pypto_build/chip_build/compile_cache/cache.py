"""The compile cache's one entry point: an artifact for a compile key, from the cache's folder,
its remote tier or a compile.

A miss takes the key's file lock, which only keeps two builders from compiling the same key at
once; a lock that cannot be had in time means compiling without the cache, never failing or
hanging the build. Under the lock the folder is asked again (another builder may have just
published), then the remote tier (:mod:`.remote`), whose entries are verified as local ones are
and whose hit is published locally like a compile; every entry published from a compile is
queued for upload. A cache that cannot be used at all (its folder is a file or read-only, a lock
cannot be opened) means compiling without it, with one warning, never a failed build.

The pieces, each with one job: the keys (:mod:`.keys`), the recorded dependencies and the
files a build checked (:mod:`.dependencies`), the layout and manifests (:mod:`.layout`),
lookups (:mod:`.lookup`), publishing (:mod:`.publish`), statistics and pruning (:mod:`.stats`),
over the store's folder (:mod:`pypto_build.store.disk`).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build.chip_build.compile_cache.dependencies import FileDigests, FileHashes
from pypto_build.chip_build.compile_cache.entry_publisher import Built, EntryPublisher
from pypto_build.chip_build.compile_cache.layout import LAYOUT, parse_manifest
from pypto_build.chip_build.compile_cache.lookup import EntryReader
from pypto_build.chip_build.compile_cache.stats import (
    BuildCounts,
    CacheStats,
    CacheUsage,
    PruneResult,
)
from pypto_build.files import read_regular
from pypto_build.store.disk import DiskStorage
from pypto_build.store.storage import Damaged, Unavailable

if TYPE_CHECKING:
    import filelock

    from pypto_build.chip_build.compile_cache.remote import RemoteTier


@dataclass(frozen=True)
class Fetched:
    """The artifact's bytes, whether they came from the cache, and whether from its remote
    tier."""

    data: bytes
    hit: bool
    remote: bool = False
    #: Whether the artifact is already at the ``output`` the caller asked for
    #: (:meth:`CompileCache.fetch_or_build`); when not, writing it there is the caller's work.
    placed: bool = False
    #: The SHA-256 of ``data`` where the cache has verified it (a local hit), else None.
    sha256: str | None = None


def _warn_stderr(message: str) -> None:
    print(f"pypto-build: warning: {message}", file=sys.stderr, flush=True)


class CompileCache:
    """The cache at ``root`` (see the package and this module)."""

    def __init__(
        self,
        root: Path,
        *,
        lock_timeout: float = 600.0,
        remote: RemoteTier | None = None,
        warn: Callable[[str], None] = _warn_stderr,
    ) -> None:
        self.root = root
        self.lock_timeout = lock_timeout
        self.remote = remote
        self._warn = warn
        self._warned: set[str] = set()
        self._warn_lock = threading.Lock()
        self._storage = DiskStorage(
            root, LAYOUT, warn=warn, label="compile cache", folder_note=" (a link or a file)"
        )
        hashes = FileHashes()
        self._entries = EntryReader(self._storage, hashes, warn)
        self._publisher = EntryPublisher(self._storage, hashes, self._warn_once)
        self._usage = CacheUsage(self._storage, lock_timeout)
        self._hashes = hashes

    def fetch_or_build(
        self,
        key: str,
        tree: Path,
        build: Callable[[Path], Built],
        files: FileDigests | None = None,
        output: Path | None = None,
    ) -> Fetched:
        """The artifact for compile ``key`` of a source in ``tree``: a valid entry whose
        dependencies are unchanged, else ``build(staging_dir)`` run and published. ``files``
        holds what this build already found the files it checked to be (a fresh one when not
        given: every file is looked at). On a local hit the artifact is also linked to
        ``output``, when given and the file systems allow it (:attr:`Fetched.placed`). A cache
        that cannot be used means ``build`` runs in a private folder, with one warning."""
        if files is None:
            files = FileDigests()
        try:
            return self._fetch_or_build(key, tree, build, files, output)
        except Unavailable as trouble:
            self._warn_once(
                "unusable",
                f"compile cache {self.root} is unusable ({trouble}); compiling without it",
            )
            return Fetched(_build_uncached(build), hit=False)

    def _fetch_or_build(
        self,
        key: str,
        tree: Path,
        build: Callable[[Path], Built],
        files: FileDigests,
        output: Path | None,
    ) -> Fetched:
        found = self._entries.lookup(key, tree, files, output)
        if found is not None:
            return Fetched(found.data, hit=True, placed=found.placed, sha256=found.sha256)
        import filelock  # a miss only: a warm build takes no lock

        lock = self._key_lock(key)
        try:
            lock.acquire()
        except filelock.Timeout:
            self._warn_once(
                "lock-timeout",
                f"compile cache {self.root}: a lock was not free within {self.lock_timeout:g} s; "
                "compiling without the cache",
            )
            return Fetched(_build_uncached(build), hit=False)
        except OSError as exc:
            raise Unavailable(f"lock {lock.lock_file}: {exc.strerror or exc}") from None
        try:
            # Another builder may have just published it.
            found = self._entries.lookup(key, tree, files, output)
            if found is not None:
                return Fetched(found.data, hit=True, placed=found.placed, sha256=found.sha256)
            data = self._remote_lookup(key, tree, files)
            if data is not None:
                return Fetched(data, hit=True, remote=True)
            data, manifest = self._publisher.build_and_publish(key, tree, build, files)
            if manifest is not None and self.remote is not None:
                self.remote.upload(key, manifest, data)
            return Fetched(data, hit=False)
        finally:
            with contextlib.suppress(OSError):
                lock.release()

    @contextlib.contextmanager
    def fetch_or_build_file(
        self, key: str, tree: Path, build: Callable[[Path], Built], name: str
    ) -> Iterator[Path]:
        """:meth:`fetch_or_build`, for a consumer that needs the artifact as a file (the
        dynamic loader): a private copy named ``name``, beside the entries and removed when the
        context exits. The entry stays the only lasting copy, so what :meth:`stats` counts and
        :meth:`prune` evicts is everything the cache holds. An unusable cache puts the copy in
        a private temporary folder instead."""
        data = self.fetch_or_build(key, tree, build).data
        with contextlib.ExitStack() as stack:
            try:
                work = stack.enter_context(self._storage.staging())
            except Unavailable:
                work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pypto-build-")))
            path = work / name
            path.write_bytes(data)
            yield path

    def _warn_once(self, topic: str, message: str) -> None:
        with self._warn_lock:
            if topic in self._warned:
                return
            self._warned.add(topic)
        self._warn(message)

    def _key_lock(self, key: str) -> filelock.FileLock:
        """The key's lock, its file checked to be a regular file and never a link (filelock
        opens it without following one, the floor pyproject.toml pins)."""
        path = self._storage.usable_folder("locks", key[:2]) / f"{key}.lock"
        return self._storage.lock(path, self.lock_timeout)

    def _remote_lookup(self, key: str, tree: Path, files: FileDigests) -> bytes | None:
        """The artifact of the first remote entry whose manifest is sound and whose recorded
        files all have their recorded hashes here, published locally; None on a miss. A
        remote entry is checked exactly as a local one is."""
        if self.remote is None:
            return None
        for entry in self.remote.entries(key):
            try:
                artifact, dependencies = parse_manifest(entry.manifest, key)
                if not files.match(dependencies, str(tree), self._hashes.sha256):
                    continue
            except (ValueError, Damaged) as exc:
                entry.damaged(str(exc))
                continue
            data = entry.artifact(artifact)
            if data is not None:
                self._publisher.try_publish(key, data, dependencies)
                return data
        return None

    def flush(self) -> None:
        """Wait for the remote tier's uploads (a no-op without one); a build calls this last."""
        if self.remote is not None:
            self.remote.flush()

    # --- statistics and pruning (:mod:`.stats`) -------------------------------------------

    def record_build(self, counts: BuildCounts) -> None:
        """:meth:`.stats.CacheUsage.record_build`."""
        self._usage.record_build(counts)

    def stats(self) -> CacheStats:
        """:meth:`.stats.CacheUsage.stats`."""
        return self._usage.stats()

    def prune(self, max_size: int) -> PruneResult:
        """:meth:`.stats.CacheUsage.prune`."""
        return self._usage.prune(max_size)


def _build_uncached(build: Callable[[Path], Built]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="pypto-build-") as stage:
        return read_regular(build(Path(stage)).artifact)
