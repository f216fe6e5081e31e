"""The files a compile read, as the compile cache records and checks them.

What the compiler read — every header, from its ``-MD`` dependency file — is only known after a
compile, so each entry records those files with their hashes, and a lookup accepts an entry
only while every recorded file still has the recorded hash. Dependencies inside the tree being
built are recorded relative to it, those inside pypto-build's own package (its kernel headers,
the simulator's orchestration API and runtime sources) relative to the package
(:data:`~.keys.PACKAGE_PLACEHOLDER`); every other file (PTO-ISA, the runtime, the system's
headers) by absolute path, its include directory being part of the command line, hence of the
key. A lookup checks each recorded file's hash where it is now, so a moved pypto-build with
other headers still misses. A build looks at each recorded file once (:class:`FileDigests`):
the kernels of a sub-build share a hundred-odd headers, and a warm build is a hundred-odd hits.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from pathlib import Path

from pypto_build.chip_build.compile_cache.keys import PACKAGE, PACKAGE_PLACEHOLDER
from pypto_build.files import NotRegularFile, read_regular, sha256_regular
from pypto_build.store.storage import Damaged

#: A SHA-256 as manifests spell it.
SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Dependency:
    #: POSIX path relative to the tree when ``in_tree``, else absolute (with pypto-build's
    #: folder spelled :data:`PACKAGE_PLACEHOLDER`).
    path: str
    in_tree: bool
    sha256: str

    def as_json(self) -> dict[str, object]:
        return {"in_tree": self.in_tree, "path": self.path, "sha256": self.sha256}

    @functools.cached_property
    def packaged(self) -> bool:
        """Whether the path is inside pypto-build's package (:data:`PACKAGE_PLACEHOLDER`);
        kept, as dependencies are shared by entries."""
        return not self.in_tree and self.path.startswith(f"{PACKAGE_PLACEHOLDER}/")

    @functools.cached_property
    def canonical(self) -> str:
        """:meth:`as_json` as :func:`~.keys.digest_json` spells it (sorted keys, no spaces, ASCII),
        written out: naming an entry joins a hundred of these on every hit."""
        in_tree = "true" if self.in_tree else "false"
        path = encode_basestring_ascii(self.path)
        return f'{{"in_tree":{in_tree},"path":{path},"sha256":"{self.sha256}"}}'


class FileDigests:
    """What one build found the files it checked to be, each file looked at once.

    Every kernel of a sub-build includes the same hundred-odd system and PTO headers, so a warm
    build that checked each recorded file on every hit spent most of a hit's time on ``stat``.
    A build's inputs are not expected to change while it runs (as every build tool assumes), so
    the first finding about a path (its SHA-256, missing, not a regular file) stands for the
    rest of the build; a new build starts a new one, so a header edited between builds is seen.
    :func:`pypto_build.chip_build.compile.compile_tree` keeps one per call.
    """

    def __init__(self) -> None:
        #: SHA-256 by path; None when missing, :data:`NOT_REGULAR` for a FIFO, device, folder.
        self._found: dict[str, str | None] = {}
        #: By (SHA-256, tree): the verified bytes of entries' ``shared.json`` and whether its
        #: files matched.
        self._shared: dict[tuple[str, str], tuple[bytes, bool]] = {}

    def get(self, path: str, find: Callable[[str], str | None]) -> str | None:
        """The finding for ``path``, from ``find`` the first time it is asked for."""
        try:
            return self._found[path]
        except KeyError:
            found = self._found[path] = find(path)
            return found

    def match(
        self, dependencies: Sequence[Dependency], tree: str, find: Callable[[str], str | None]
    ) -> bool:
        """Whether every recorded file has its recorded hash, for a tree at ``tree``, each file
        asked of ``find`` the first time; :class:`Damaged` when one is a FIFO, a device or a
        folder, which no compile reads as a header."""
        found = self._found
        for dep in dependencies:
            if dep.in_tree:
                path = f"{tree}/{dep.path}"
            elif dep.packaged:
                path = PACKAGE.local(dep.path)
            else:  # the system's headers, most of them
                path = dep.path
            digest = found.get(path, UNKNOWN)
            if digest is UNKNOWN:
                digest = self.get(path, find)
            if digest != dep.sha256:
                if digest == NOT_REGULAR:
                    raise Damaged(f"names {path}, which is not a regular file")
                return False
        return True

    def match_shared(
        self, shared: bytes, sha256: str, tree: str, find: Callable[[str], str | None]
    ) -> bool:
        """:meth:`match` for an entry's shared dependencies (``shared``: the bytes of its
        ``shared.json``, whose SHA-256 the manifest claims to be ``sha256``): the entries of a
        sub-build share one such list of a hundred-odd headers, so it is hashed, parsed and
        matched once per build; a later entry's bytes are only compared with the verified ones.
        :class:`Damaged` when the bytes are not what their hash says or not a list of
        dependencies."""
        known = self._shared.get((sha256, tree))
        if known is not None:
            if known[0] != shared:  # the verified bytes have this hash, so these do not
                raise Damaged("shared dependencies do not have their recorded SHA-256")
            return known[1]
        if hashlib.sha256(shared).hexdigest() != sha256:
            raise Damaged("shared dependencies do not have their recorded SHA-256")
        try:
            dependencies = parse_dependencies(json.loads(shared))
        except (ValueError, RecursionError) as exc:  # nested past the parser's depth
            raise Damaged(f"shared dependencies: {exc}") from None
        matched = self.match(dependencies, tree, find)
        self._shared[(sha256, tree)] = (shared, matched)
        return matched

    def read(self, path: Path) -> bytes:
        """The bytes of the regular file ``path`` (:func:`~pypto_build.files.read_regular`),
        its SHA-256 noted: a compile reads its source for the key, and the entry then checks
        the same file."""
        data = read_regular(path)
        self._found.setdefault(str(path), hashlib.sha256(data).hexdigest())
        return data


#: A :class:`FileDigests` finding: the path is not a regular file (never a SHA-256 in hex).
NOT_REGULAR = "not a regular file"
#: Not yet found (a finding may be None: missing).
UNKNOWN = "unknown"


def parse_dependencies(raw: object) -> list[Dependency]:
    """The recorded dependencies of a manifest's list (ValueError if malformed)."""
    if type(raw) is not list:
        raise ValueError("malformed manifest")
    # Exact types, as JSON gives them (``type(...) is`` costs less than ``isinstance``, and a
    # manifest lists a hundred dependencies or more).
    dependencies: list[Dependency] = []
    for item in raw:
        # Three fields, no more, no fewer: those :meth:`Dependency.as_json` writes.
        if type(item) is not dict or len(item) != 3:
            raise ValueError("malformed dependency")
        try:
            path, in_tree, digest = item["path"], item["in_tree"], item["sha256"]
        except KeyError:
            raise ValueError("malformed dependency") from None
        if type(path) is not str or type(in_tree) is not bool or type(digest) is not str:
            raise ValueError("malformed dependency")
        dependencies.append(_dependency(path, in_tree, digest))
    return dependencies


@functools.lru_cache(maxsize=1 << 14)
def _dependency(path: str, in_tree: bool, digest: str) -> Dependency:
    """A recorded dependency, checked (ValueError when malformed). Remembered, as a pure
    function of its fields: every entry of a sub-build records the same hundred-odd headers."""
    if SHA256.fullmatch(digest) is None:
        raise ValueError("dependency hash is not a SHA-256")
    _check_dependency_path(path, in_tree)
    return Dependency(path, in_tree, digest)


def _check_dependency_path(path: str, in_tree: bool) -> None:
    """A recorded dependency is a normalized path: inside the tree, relative; elsewhere,
    absolute. Neither ever climbs with ``..``, so an entry cannot name a file the compile
    did not read from where the cache recorded it (ValueError otherwise)."""
    parts = path.split("/")
    if "\0" in path or ".." in parts or "." in parts:
        raise ValueError(f"dependency path {path!r} is not normalized")
    if in_tree and (path.startswith("/") or "" in parts):
        raise ValueError(f"in-tree dependency {path!r} leaves the tree")
    if not in_tree and (not path.startswith("/") or "" in parts[1:]):
        raise ValueError(f"dependency {path!r} is not an absolute path")


def listing(dependencies: Sequence[Dependency]) -> str:
    """``dependencies`` as :func:`~.keys.digest_json` spells their :meth:`~Dependency.as_json`: the
    text of an entry's ``shared.json``, which is also valid JSON."""
    return "[" + ",".join([dep.canonical for dep in dependencies]) + "]"


class FileHashes:
    """File hashes by (path, size, modification time, inode), for every build a compile cache
    serves: a build's :class:`FileDigests` asks each file once, a new build then hashes only
    what changed."""

    def __init__(self) -> None:
        self._hashes: dict[tuple[str, int, int, int], str] = {}

    def sha256(self, path: str) -> str | None:
        """The SHA-256 of the regular file ``path``; None when it is missing (a changed header
        is a miss), :data:`NOT_REGULAR` when it is not a regular file."""
        try:
            status = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(status.st_mode):
            return NOT_REGULAR
        memo_key = (path, status.st_size, status.st_mtime_ns, status.st_ino)
        digest = self._hashes.get(memo_key)
        if digest is None:
            try:
                digest = sha256_regular(path)
            except NotRegularFile:
                return NOT_REGULAR
            except OSError:
                return None
            self._hashes[memo_key] = digest
        return digest
