"""Finding a compile's entry in the cache's folder.

Every entry of the key is a candidate, taken in name order, and is used only when it is one
this cache could have published: its folder, manifest, ``shared.json`` and artifact are real
files, the manifest is well formed and names its own entry (the folder's name is the hash of
the key, the entry's own dependencies and the hash of ``shared.json``, so a flipped dependency
hash shows; that file must have its hash), every dependency is a path inside the tree
(relative, no ``..``) or an absolute path without ``..``, and every one is a regular file:
reading a FIFO or ``/dev/zero`` would hang the build. Anything else is a damaged entry:
evicted, with one warning line, and rebuilt. The first candidate whose recorded files all
still have their recorded hashes is a hit: its manifest's modification time is refreshed (the
"last use" pruning evicts by), and the artifact it has verified is hard-linked to where the
caller wants it (the tree's binary), where the file systems allow.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pypto_build.chip_build.compile_cache.dependencies import FileDigests, FileHashes
from pypto_build.chip_build.compile_cache.layout import (
    ARTIFACT,
    MANIFEST,
    SHARED,
    entry_name,
    key_folder,
    parse_entry_manifest,
)
from pypto_build.files import read_regular, read_regular_status
from pypto_build.store.disk import DiskStorage, link_verified
from pypto_build.store.storage import Damaged


@dataclass(frozen=True)
class Found:
    """A local entry's verified artifact, its SHA-256, and whether it was linked to the
    requested output."""

    data: bytes
    sha256: str
    placed: bool


class EntryReader:
    """The entries of the compile cache's folder ``storage`` for lookups: files hashed with
    ``hashes``, damaged entries evicted with a warning to ``warn``."""

    def __init__(
        self, storage: DiskStorage, hashes: FileHashes, warn: Callable[[str], None]
    ) -> None:
        self._storage = storage
        self._hashes = hashes
        self._warn = warn

    def lookup(self, key: str, tree: Path, files: FileDigests, output: Path | None) -> Found | None:
        """The first valid entry of ``key`` for a source in ``tree`` whose recorded files all
        have their recorded hashes (its artifact linked to ``output`` when possible); None on
        a miss. Damaged entries met on the way are evicted."""
        # Paths as strings: a warm build looks up a hundred-odd keys, and each path object
        # costs more than the system call it is for.
        base, parts = self._storage.base, key_folder(key)
        entries, bucket, key_dir = (f"{base}/{'/'.join(parts[:depth])}" for depth in (1, 2, 3))
        if not all(self._storage.existing_folder(path) for path in (entries, bucket, key_dir)):
            return None
        try:
            with os.scandir(key_dir) as listing:  # with each item's type: no stat per entry
                candidates = sorted(listing, key=lambda item: item.name)
        except OSError:
            return None
        for item in candidates:
            try:
                if not item.is_dir(follow_symlinks=False):
                    raise Damaged("not a folder")
                found = self._read_entry(item.path, item.name, key, tree, files, output)
            except Damaged as damage:
                self._evict(Path(item.path), str(damage))
                continue
            if found is not None:
                return found
        return None

    def _read_entry(
        self,
        entry: str,
        name: str,
        key: str,
        tree: Path,
        files: FileDigests,
        output: Path | None,
    ) -> Found | None:
        """The artifact of the folder ``entry`` (named ``name``) when its recorded files all
        have their recorded hashes (linked to ``output`` when possible), None when one
        differs; :class:`Damaged` when the entry is not one this cache could have published."""
        manifest_path = f"{entry}/{MANIFEST}"
        try:
            manifest = json.loads(read_regular(manifest_path, follow_symlinks=False))
        except FileNotFoundError:
            raise Damaged("no manifest") from None
        except OSError as exc:
            raise Damaged(f"manifest: {exc.strerror or exc}") from None
        except (ValueError, RecursionError):  # nested past the parser's depth
            raise Damaged("manifest is not JSON") from None
        try:
            artifact, own, shared_sha256 = parse_entry_manifest(manifest, key)
        except ValueError as exc:
            raise Damaged(str(exc)) from None
        if name != entry_name(key, own, shared_sha256):
            raise Damaged("the manifest's dependencies do not match the entry's name")
        if not files.match(own, str(tree), self._hashes.sha256):
            return None
        try:
            shared = read_regular(f"{entry}/{SHARED}", follow_symlinks=False)
        except OSError as exc:
            raise Damaged(f"{SHARED}: {exc.strerror or exc}") from None
        if not files.match_shared(shared, shared_sha256, str(tree), self._hashes.sha256):
            return None
        path = f"{entry}/{ARTIFACT}"
        try:
            data, status = read_regular_status(path, follow_symlinks=False)
        except OSError as exc:
            raise Damaged(f"artifact: {exc.strerror or exc}") from None
        if hashlib.sha256(data).hexdigest() != artifact:
            raise Damaged("artifact does not have the manifest's SHA-256")
        placed = output is not None and link_verified(path, status, output)
        with contextlib.suppress(OSError):  # pruned meanwhile: the bytes are still good
            os.utime(manifest_path, follow_symlinks=False)
        return Found(data, artifact, placed)

    def _evict(self, entry: Path, reason: str) -> None:
        self._warn(f"compile cache: evicted damaged entry {entry} ({reason}); rebuilding")
        self._storage.remove(entry)
