"""Publishing a compile's entry in the cache's folder.

An entry is built in a staging directory, its manifest (with the artifact's SHA-256) written
last, and published with one atomic rename, so a reader sees a whole entry or none
(:mod:`pypto_build.store.disk`). A cache that cannot take the entry (full, read-only) costs a
warning, never the build that has the artifact in hand; a compile that read a file which is
gone by now is not published, since nothing could verify it later.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pypto_build.chip_build.compile_cache.dependencies import (
    NOT_REGULAR,
    Dependency,
    FileDigests,
    FileHashes,
    listing,
)
from pypto_build.chip_build.compile_cache.keys import PACKAGE
from pypto_build.chip_build.compile_cache.layout import (
    ARTIFACT,
    MANIFEST,
    SHARED,
    entry_manifest,
    entry_name,
    key_folder,
    portable_manifest,
)
from pypto_build.files import FILE_MODE, atomic_write_text, read_regular
from pypto_build.store.disk import DiskStorage
from pypto_build.store.storage import Unavailable


@dataclass(frozen=True)
class Built:
    """What a builder hands back to the cache: the artifact and every file the compile read."""

    artifact: Path
    dependencies: tuple[Path, ...]


class EntryPublisher:
    """Publishes entries in the compile cache's folder ``storage`` (files hashed with
    ``hashes``); a cache that cannot take one is said once through ``warn_once``."""

    def __init__(
        self,
        storage: DiskStorage,
        hashes: FileHashes,
        warn_once: Callable[[str, str], None],
    ) -> None:
        self._storage = storage
        self._hashes = hashes
        self._warn_once = warn_once

    def build_and_publish(
        self, key: str, tree: Path, build: Callable[[Path], Built], files: FileDigests
    ) -> tuple[bytes, dict[str, object] | None]:
        """``build(staging_dir)`` run and its artifact published as an entry of ``key``: the
        artifact's bytes, and the self-contained manifest of the entry published (None when
        none was)."""
        with self._storage.staging() as work:
            staging = work / "build"
            staging.mkdir()
            built = build(staging)
            data = read_regular(built.artifact)
            recorded = [self._record(path, tree, files) for path in built.dependencies]
        dependencies = [dep for dep in recorded if dep is not None]
        if len(dependencies) != len(recorded):
            # A file the compiler read is gone: nothing could verify this entry later.
            return data, None
        return data, self.try_publish(key, data, dependencies)

    def try_publish(
        self, key: str, data: bytes, dependencies: Sequence[Dependency]
    ) -> dict[str, object] | None:
        """:meth:`_publish`; a cache that cannot take the entry (full, read-only) costs a
        warning, never the build that has the artifact in hand."""
        try:
            with self._storage.staging() as work:
                return self._publish(work, key, data, dependencies)
        except (OSError, Unavailable) as exc:
            self._warn_once(
                "publish",
                f"compile cache {self._storage.root}: cannot store compiles ({exc}); going on",
            )
            return None

    def _publish(
        self, work: Path, key: str, data: bytes, dependencies: Sequence[Dependency]
    ) -> dict[str, object]:
        """Publish ``data`` as an entry of ``key`` (staged in ``work``, manifest last, one
        rename) and return its self-contained manifest (format :data:`~.keys.FORMAT`, every
        dependency listed), the one the remote tier stores."""
        entry = work / "entry"
        entry.mkdir()
        (entry / ARTIFACT).write_bytes(data)
        os.chmod(entry / ARTIFACT, FILE_MODE)  # the mode of a build's output: linkable there
        artifact = hashlib.sha256(data).hexdigest()
        own = [dep for dep in dependencies if dep.in_tree]
        shared = listing([dep for dep in dependencies if not dep.in_tree]).encode("ascii")
        (entry / SHARED).write_bytes(shared)
        shared_sha256 = hashlib.sha256(shared).hexdigest()
        local = entry_manifest(key, artifact, own, shared_sha256)
        atomic_write_text(entry / MANIFEST, json.dumps(local, indent=1, sort_keys=True), fsync=True)
        final = self._storage.usable_folder(*key_folder(key)) / entry_name(key, own, shared_sha256)
        with contextlib.suppress(OSError):  # the same entry is already published
            os.rename(entry, final)
        return portable_manifest(key, artifact, dependencies)

    def _record(self, path: Path, tree: Path, files: FileDigests) -> Dependency | None:
        digest = files.get(str(path), self._hashes.sha256)
        if digest is None or digest == NOT_REGULAR:
            return None
        if path.is_relative_to(tree):
            return Dependency(path.relative_to(tree).as_posix(), True, digest)
        return Dependency(PACKAGE.portable(str(path)), False, digest)
