"""The content-addressed compile cache shared by every build of a user.

Keying follows ccache's direct mode in two phases. The *compile key* hashes what is known
before compiling: the source bytes, every command line of the plan (planned against a
placeholder staging directory, so no temporary path enters it), and the toolchain's identity
and version (:func:`compile_key`). What the compiler then read — every header, from its
``-MD`` dependency file — is only known afterwards, so each entry records those files with
their hashes, and a lookup accepts an entry only while every recorded file still has the
recorded hash. One compile key can therefore hold several entries (one per set of header
contents), each named by the hash of the key and its dependencies.

Keys and entries depend on content, never on where the tree or pypto-build is installed: an
isolated build (pip, build, uv) installs pypto-build into a new temporary environment each time,
and must still hit. So dependencies inside the tree being built are recorded relative to it, and
those inside pypto-build's own package (its kernel headers, the simulator's orchestration API
and runtime sources) relative to the package; in command lines the package's folder is named
by :data:`PACKAGE_PLACEHOLDER` (:func:`compile_key`), as a plan names the tree by a placeholder.
Every other file (PTO-ISA, the runtime, the system's headers) is recorded by absolute path, and
its include directory is part of the command line, hence of the key. A lookup checks each
recorded file's hash where it is now, so a moved pypto-build with other headers still misses.
A build looks at each recorded file once (:class:`FileDigests`): the kernels of a sub-build
share a hundred-odd headers, and a warm build is a hundred-odd hits.

Layout (``v2``, :data:`LAYOUT`; a new layout gets a new directory, so the entries of an older
one are misses, never errors)::

    <root>/v2/entries/<key[:2]>/<key>/<entry>/{artifact, shared.json, manifest.json}
    <root>/v2/tmp/              staging, on the same file system as entries/
    <root>/v2/locks/<key[:2]>/<key>.lock
    <root>/v2/last-build.json   hits and misses of the last recorded build

A manifest lists the entry's own dependencies (the files in the tree: the source and its
headers there) and the SHA-256 of ``shared.json``, which lists those outside the tree: the
hundred-odd system, PTO-ISA and pypto-build headers that every kernel of a sub-build shares. A
build hashes, parses and matches each such file's bytes once (:meth:`FileDigests.match_shared`)
and only compares later entries' bytes with them, where layout ``v1`` parsed and matched the
whole list on every hit (and a list kept as a string inside the manifest would cost decoding
its escapes on every hit). The remote tier keeps the self-contained manifests of format
:data:`FORMAT` (every dependency listed), which is also the keys' format.

An entry is built in a staging directory, its manifest (with the artifact's SHA-256) written
last, and published with one atomic rename, so a reader sees a whole entry or none. A staging
directory is locked while in use, so ``prune`` can tell a killed build's leftovers from a
running build's work. The per-key file lock only keeps two builders from compiling the same key
at once; a lock that cannot be had in time means compiling without the cache, never failing or
hanging the build. A hit refreshes the manifest's modification time, the "last use" that
pruning evicts by, and hard-links the artifact it has verified to where the caller wants it (the
tree's binary), where the file systems allow: creating and writing a file costs many times
reading one.

The cache trusts nothing it reads, because anything can be left in a folder: a killed build's
half, a flipped bit, a link planted by another program. So no path inside the cache is followed
through a symbolic link for writing (its folders are checked to be real folders, its lock files
to be regular files, and filelock opens them without following a link), and an entry is used
only when its folder, manifest, ``shared.json`` and artifact are real files, the manifest is
well formed and names its own entry (the folder's name is the hash of the key, the entry's own
dependencies and the hash of ``shared.json``, so a flipped dependency hash shows; that file must
have its hash), every dependency is a path inside the tree (relative, no
``..``) or an absolute path without ``..``, and every one is a regular file: reading a FIFO or
``/dev/zero`` would hang the build. Anything else is a damaged entry: evicted, with one warning
line, and rebuilt. A cache that cannot be used at all (its folder is a file or read-only, a
lock cannot be opened) means compiling without it, with one warning, never a failed build.

An optional remote tier (:mod:`pypto_build.chip_build.remote_cache`) is asked on a local miss,
under the key's lock; its entries are verified as local ones are and a hit is published locally
like a compile. Every entry this cache publishes from a compile is queued for upload.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build.chip_build.cache_location import default_cache_dir
from pypto_build.files import (
    FILE_MODE,
    NotRegularFile,
    atomic_write_text,
    is_regular,
    read_regular,
    read_regular_status,
    sha256_regular,
)

if TYPE_CHECKING:
    import filelock

    from pypto_build.chip_build.remote_cache import RemoteTier

__all__ = [
    "PACKAGE",
    "BuildCounts",
    "Built",
    "CacheStats",
    "CompileCache",
    "Fetched",
    "PruneResult",
    "compile_key",
    "default_cache_dir",
    "parse_size",
    "read_depfile",
]

#: The format of compile keys and of the self-contained manifests the remote tier stores.
FORMAT = "v1"
#: The local layout: its folder, and the format of its entries' manifests.
LAYOUT = "v2"
#: How a layout's folder is named (``v1``, ``v2``, ...).
_LAYOUT_NAME = re.compile(r"v[0-9]+")
#: How cache keys and entries name pypto-build's package folder.
PACKAGE_PLACEHOLDER = "/@pypto_build"


@dataclass(frozen=True)
class PackageFolder:
    """pypto-build's package folder as installed here, and its placeholder spelling."""

    root: Path

    def portable(self, text: str) -> str:
        """``text`` (a path, or an argument holding one) with the folder as the placeholder."""
        if str(self.root) not in text:  # most arguments: no regular expression
            return text
        return re.sub(re.escape(str(self.root)) + r"(?=/|$)", PACKAGE_PLACEHOLDER, text)

    def local(self, text: str) -> str:
        """The inverse of :meth:`portable`, for this installation."""
        if PACKAGE_PLACEHOLDER not in text:  # most recorded files: no regular expression
            return text
        return re.sub(re.escape(PACKAGE_PLACEHOLDER) + r"(?=/|$)", str(self.root), text)


#: This installation: the parent of ``chip_build``.
PACKAGE = PackageFolder(Path(__file__).resolve().parents[1])
_MANIFEST = "manifest.json"
_ARTIFACT = "artifact"
_SHARED = "shared.json"
_LAST_BUILD = "last-build.json"


def compile_key(
    *, source: bytes, commands: Sequence[Sequence[str]], identity: str, version: str
) -> str:
    """The first-phase key of a compile: everything known before running the compiler, with
    pypto-build's folder in the command lines named by :data:`PACKAGE_PLACEHOLDER`."""
    document = {
        "commands": [[PACKAGE.portable(arg) for arg in argv] for argv in commands],
        "format": FORMAT,
        "identity": identity,
        "source_sha256": hashlib.sha256(source).hexdigest(),
        "version": version,
    }
    return _digest_json(document)


def _digest_json(document: object) -> str:
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


#: One word of a dependency file: escaped spaces and ``#`` (``\ ``, ``\#``) and ``$$`` belong
#: to the word; any other whitespace ends it.
_DEPFILE_WORD = re.compile(r"(?:\\[ #]|\$\$|\S)+")
_DEPFILE_ESCAPE = re.compile(r"\\([ #])|\$(\$)")


def read_depfile(depfile: Path, cwd: Path) -> tuple[Path, ...]:
    """The prerequisites of a make-style dependency file (``-MD -MF``), as absolute paths,
    each once, in the order the file first names them.

    Relative paths are relative to ``cwd``, where the compiler ran. Handles line continuations,
    backslash-escaped spaces and ``#`` and ``$$``; the rule's target is dropped. One pass of a
    regular expression over the text: a compile of a kernel lists a hundred headers or more.
    """
    text = read_regular(depfile).decode("utf-8", errors="surrogateescape")
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    base = str(cwd)
    prerequisites: dict[str, None] = {}
    for match in _DEPFILE_WORD.finditer(text):
        word = match.group()
        if word.endswith(":"):  # a target ("out.so:"); everything else is a prerequisite
            continue
        if "\\" in word or "$" in word:
            word = _DEPFILE_ESCAPE.sub(lambda escape: escape.group(1) or escape.group(2), word)
        prerequisites[os.path.normpath(os.path.join(base, word))] = None
    return tuple(Path(path) for path in prerequisites)


@dataclass(frozen=True)
class Built:
    """What a builder hands back to the cache: the artifact and every file the compile read."""

    artifact: Path
    dependencies: tuple[Path, ...]


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


@dataclass(frozen=True)
class _Dependency:
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
        """:meth:`as_json` as :func:`_digest_json` spells it (sorted keys, no spaces, ASCII),
        written out: naming an entry joins a hundred of these on every hit."""
        in_tree = "true" if self.in_tree else "false"
        path = encode_basestring_ascii(self.path)
        return f'{{"in_tree":{in_tree},"path":{path},"sha256":"{self.sha256}"}}'


@dataclass(frozen=True)
class _Entry:
    path: Path
    last_use: float
    size: int


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
        #: SHA-256 by path; None when missing, :data:`_NOT_REGULAR` for a FIFO, device, folder.
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
        self, dependencies: Sequence[_Dependency], tree: str, find: Callable[[str], str | None]
    ) -> bool:
        """Whether every recorded file has its recorded hash, for a tree at ``tree``, each file
        asked of ``find`` the first time; :class:`_Damaged` when one is a FIFO, a device or a
        folder, which no compile reads as a header."""
        found = self._found
        for dep in dependencies:
            if dep.in_tree:
                path = f"{tree}/{dep.path}"
            elif dep.packaged:
                path = PACKAGE.local(dep.path)
            else:  # the system's headers, most of them
                path = dep.path
            digest = found.get(path, _UNKNOWN)
            if digest is _UNKNOWN:
                digest = self.get(path, find)
            if digest != dep.sha256:
                if digest == _NOT_REGULAR:
                    raise _Damaged(f"names {path}, which is not a regular file")
                return False
        return True

    def match_shared(
        self, shared: bytes, sha256: str, tree: str, find: Callable[[str], str | None]
    ) -> bool:
        """:meth:`match` for an entry's shared dependencies (``shared``: the bytes of its
        ``shared.json``, whose SHA-256 the manifest claims to be ``sha256``): the entries of a
        sub-build share one such list of a hundred-odd headers, so it is hashed, parsed and
        matched once per build; a later entry's bytes are only compared with the verified ones.
        :class:`_Damaged` when the bytes are not what their hash says or not a list of
        dependencies."""
        known = self._shared.get((sha256, tree))
        if known is not None:
            if known[0] != shared:  # the verified bytes have this hash, so these do not
                raise _Damaged("shared dependencies do not have their recorded SHA-256")
            return known[1]
        if hashlib.sha256(shared).hexdigest() != sha256:
            raise _Damaged("shared dependencies do not have their recorded SHA-256")
        try:
            dependencies = _parse_dependencies(json.loads(shared))
        except (ValueError, RecursionError) as exc:  # nested past the parser's depth
            raise _Damaged(f"shared dependencies: {exc}") from None
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
_NOT_REGULAR = "not a regular file"
#: Not yet found (a finding may be None: missing).
_UNKNOWN = "unknown"


@dataclass(frozen=True)
class _Found:
    """A local entry's verified artifact, its SHA-256, and whether it was linked to the
    requested output."""

    data: bytes
    sha256: str
    placed: bool


class _Damaged(Exception):
    """An entry that cannot be what this cache published: evicted, with one warning."""


class _Unusable(Exception):
    """The cache's folder cannot be used at all (a file, read-only, a lock that cannot be
    taken): the build compiles without it, with one warning."""


def _warn_stderr(message: str) -> None:
    print(f"pypto-build: warning: {message}", file=sys.stderr, flush=True)


class CompileCache:
    """The cache at ``root`` (see the module docstring)."""

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
        self._base = root / LAYOUT
        self._warn = warn
        self._warned: set[str] = set()
        self._warn_lock = threading.Lock()
        # File hashes by (path, size, mtime, inode), for every build this object serves: a
        # build's FileDigests asks each file once, a new build then hashes only what changed.
        self._hashes: dict[tuple[str, int, int, int], str] = {}

    # --- compile ---------------------------------------------------------------------------

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
        except _Unusable as trouble:
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
        found = self._lookup(key, tree, files, output)
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
            raise _Unusable(f"lock {lock.lock_file}: {exc.strerror or exc}") from None
        try:
            # Another builder may have just published it.
            found = self._lookup(key, tree, files, output)
            if found is not None:
                return Fetched(found.data, hit=True, placed=found.placed, sha256=found.sha256)
            data = self._remote_lookup(key, tree, files)
            if data is not None:
                return Fetched(data, hit=True, remote=True)
            return Fetched(self._build_and_publish(key, tree, build, files), hit=False)
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
                work = stack.enter_context(self._staging())
            except _Unusable:
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

    # --- folders that are never links ------------------------------------------------------

    def _dir(self, *parts: str) -> Path:
        """``<root>/v2/<parts...>``, each folder created when missing and checked to be a real
        folder, not a link: a planted link must never make the cache write outside itself.
        A link or file where a folder belongs is removed (the link, never its target); a
        folder that cannot be had makes the cache unusable."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if not self.root.is_dir():
                raise _Unusable(f"{self.root} is not a folder")
            path = self._base
            self._real_dir(path)
            for part in parts:
                path = path / part
                self._real_dir(path)
            return path
        except OSError as exc:
            raise _Unusable(f"{exc.filename or self.root}: {exc.strerror or exc}") from None

    def _real_dir(self, path: Path) -> None:
        try:
            os.mkdir(path)
            return
        except FileExistsError:
            pass
        if stat.S_ISDIR(os.lstat(path).st_mode):
            return
        self._warn(f"compile cache: removed {path}, which is not a folder (a link or a file)")
        _remove_path(path)
        os.mkdir(path)

    def _existing_dir(self, path: str | Path) -> bool:
        """Whether ``path`` (inside the cache) is a real folder; a link or file there is
        removed."""
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return False
        if stat.S_ISDIR(mode):
            return True
        self._warn(f"compile cache: removed {path}, which is not a folder (a link or a file)")
        with contextlib.suppress(OSError):
            _remove_path(path)
        return False

    def _key_lock(self, key: str) -> filelock.FileLock:
        """The key's lock, its file checked to be a regular file and never a link (filelock
        opens it without following one, the floor pyproject.toml pins)."""
        import filelock

        path = self._dir("locks", key[:2]) / f"{key}.lock"
        self._clear_non_regular(path)
        return filelock.FileLock(path, timeout=self.lock_timeout)

    def _clear_non_regular(self, path: Path) -> None:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _Unusable(f"{path}: {exc.strerror or exc}") from None
        if stat.S_ISREG(mode):
            return
        self._warn(f"compile cache: removed {path}, which is not a regular file (a link?)")
        try:
            _remove_path(path)
        except OSError as exc:
            raise _Unusable(f"{path}: {exc.strerror or exc}") from None

    # --- lookups ---------------------------------------------------------------------------

    def _lookup(
        self, key: str, tree: Path, files: FileDigests, output: Path | None
    ) -> _Found | None:
        # Paths as strings: a warm build looks up a hundred-odd keys, and each path object
        # costs more than the system call it is for.
        entries = f"{self._base}/entries"
        bucket = f"{entries}/{key[:2]}"
        key_dir = f"{bucket}/{key}"
        if not all(self._existing_dir(path) for path in (entries, bucket, key_dir)):
            return None
        try:
            with os.scandir(key_dir) as listing:  # with each item's type: no stat per entry
                candidates = sorted(listing, key=lambda item: item.name)
        except OSError:
            return None
        for item in candidates:
            try:
                if not item.is_dir(follow_symlinks=False):
                    raise _Damaged("not a folder")
                found = self._read_entry(item.path, item.name, key, tree, files, output)
            except _Damaged as damage:
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
    ) -> _Found | None:
        """The artifact of the folder ``entry`` (named ``name``) when its recorded files all
        have their recorded hashes (linked to ``output`` when possible), None when one
        differs; :class:`_Damaged` when the entry is not one this cache could have published."""
        manifest_path = f"{entry}/{_MANIFEST}"
        try:
            manifest = json.loads(read_regular(manifest_path, follow_symlinks=False))
        except FileNotFoundError:
            raise _Damaged("no manifest") from None
        except OSError as exc:
            raise _Damaged(f"manifest: {exc.strerror or exc}") from None
        except (ValueError, RecursionError):  # nested past the parser's depth
            raise _Damaged("manifest is not JSON") from None
        try:
            artifact, own, shared_sha256 = _parse_entry_manifest(manifest, key)
        except ValueError as exc:
            raise _Damaged(str(exc)) from None
        if name != _entry_name(key, own, shared_sha256):
            raise _Damaged("the manifest's dependencies do not match the entry's name")
        if not files.match(own, str(tree), self._file_hash):
            return None
        try:
            shared = read_regular(f"{entry}/{_SHARED}", follow_symlinks=False)
        except OSError as exc:
            raise _Damaged(f"{_SHARED}: {exc.strerror or exc}") from None
        if not files.match_shared(shared, shared_sha256, str(tree), self._file_hash):
            return None
        path = f"{entry}/{_ARTIFACT}"
        try:
            data, status = read_regular_status(path, follow_symlinks=False)
        except OSError as exc:
            raise _Damaged(f"artifact: {exc.strerror or exc}") from None
        if hashlib.sha256(data).hexdigest() != artifact:
            raise _Damaged("artifact does not have the manifest's SHA-256")
        placed = output is not None and _link_read(path, status, output)
        with contextlib.suppress(OSError):  # pruned meanwhile: the bytes are still good
            os.utime(manifest_path, follow_symlinks=False)
        return _Found(data, artifact, placed)

    def _file_hash(self, path: str) -> str | None:
        """The SHA-256 of the regular file ``path``; None when it is missing (a changed header
        is a miss), :data:`_NOT_REGULAR` when it is not a regular file."""
        try:
            status = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(status.st_mode):
            return _NOT_REGULAR
        memo_key = (path, status.st_size, status.st_mtime_ns, status.st_ino)
        digest = self._hashes.get(memo_key)
        if digest is None:
            try:
                digest = sha256_regular(path)
            except NotRegularFile:
                return _NOT_REGULAR
            except OSError:
                return None
            self._hashes[memo_key] = digest
        return digest

    def _evict(self, entry: Path, reason: str) -> None:
        self._warn(f"compile cache: evicted damaged entry {entry} ({reason}); rebuilding")
        self._remove(entry)

    def _remote_lookup(self, key: str, tree: Path, files: FileDigests) -> bytes | None:
        """The artifact of the first remote entry whose manifest is sound and whose recorded
        files all have their recorded hashes here, published locally; None on a miss. A
        remote entry is checked exactly as a local one is."""
        if self.remote is None:
            return None
        for entry in self.remote.entries(key):
            try:
                artifact, dependencies = _parse_manifest(entry.manifest, key)
                if not files.match(dependencies, str(tree), self._file_hash):
                    continue
            except (ValueError, _Damaged) as exc:
                entry.damaged(str(exc))
                continue
            data = entry.artifact(artifact)
            if data is not None:
                self._try_publish(key, data, dependencies)
                return data
        return None

    def flush(self) -> None:
        """Wait for the remote tier's uploads (a no-op without one); a build calls this last."""
        if self.remote is not None:
            self.remote.flush()

    # --- publishing ------------------------------------------------------------------------

    def _build_and_publish(
        self, key: str, tree: Path, build: Callable[[Path], Built], files: FileDigests
    ) -> bytes:
        with self._staging() as work:
            staging = work / "build"
            staging.mkdir()
            built = build(staging)
            data = read_regular(built.artifact)
            recorded = [self._record(path, tree, files) for path in built.dependencies]
        dependencies = [dep for dep in recorded if dep is not None]
        if len(dependencies) != len(recorded):
            # A file the compiler read is gone: nothing could verify this entry later.
            return data
        manifest = self._try_publish(key, data, dependencies)
        if manifest is not None and self.remote is not None:
            self.remote.upload(key, manifest, data)
        return data

    def _try_publish(
        self, key: str, data: bytes, dependencies: Sequence[_Dependency]
    ) -> dict[str, object] | None:
        """:meth:`_publish`; a cache that cannot take the entry (full, read-only) costs a
        warning, never the build that has the artifact in hand."""
        try:
            with self._staging() as work:
                return self._publish(work, key, data, dependencies)
        except (OSError, _Unusable) as exc:
            self._warn_once(
                "publish", f"compile cache {self.root}: cannot store compiles ({exc}); going on"
            )
            return None

    def _publish(
        self, work: Path, key: str, data: bytes, dependencies: Sequence[_Dependency]
    ) -> dict[str, object]:
        """Publish ``data`` as an entry of ``key`` (staged in ``work``, manifest last, one
        rename) and return its self-contained manifest (format :data:`FORMAT`, every
        dependency listed), the one the remote tier stores."""
        entry = work / "entry"
        entry.mkdir()
        (entry / _ARTIFACT).write_bytes(data)
        os.chmod(entry / _ARTIFACT, FILE_MODE)  # the mode of a build's output: linkable there
        artifact = hashlib.sha256(data).hexdigest()
        own = [dep for dep in dependencies if dep.in_tree]
        shared = _listing([dep for dep in dependencies if not dep.in_tree]).encode("ascii")
        (entry / _SHARED).write_bytes(shared)
        shared_sha256 = hashlib.sha256(shared).hexdigest()
        local: dict[str, object] = {
            "artifact_sha256": artifact,
            "dependencies": [dep.as_json() for dep in own],
            "format": LAYOUT,
            "key": key,
            "shared_sha256": shared_sha256,
        }
        atomic_write_text(
            entry / _MANIFEST, json.dumps(local, indent=1, sort_keys=True), fsync=True
        )
        final = self._dir("entries", key[:2], key) / _entry_name(key, own, shared_sha256)
        with contextlib.suppress(OSError):  # the same entry is already published
            os.rename(entry, final)
        return {
            "artifact_sha256": artifact,
            "dependencies": [dep.as_json() for dep in dependencies],
            "format": FORMAT,
            "key": key,
        }

    def _record(self, path: Path, tree: Path, files: FileDigests) -> _Dependency | None:
        digest = files.get(str(path), self._file_hash)
        if digest is None or digest == _NOT_REGULAR:
            return None
        if path.is_relative_to(tree):
            return _Dependency(path.relative_to(tree).as_posix(), True, digest)
        return _Dependency(PACKAGE.portable(str(path)), False, digest)

    @contextlib.contextmanager
    def _staging(self) -> Iterator[Path]:
        """A private directory beside the entries (same file system: renames are atomic),
        locked while in use: :meth:`prune` removes the staging folders whose lock is free,
        those of killed builds."""
        try:
            work = Path(tempfile.mkdtemp(dir=self._dir("tmp")))
            fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            raise _Unusable(f"staging: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            yield work
        finally:
            shutil.rmtree(work, ignore_errors=True)
            os.close(fd)

    def _remove(self, entry: Path) -> None:
        """Remove an entry: first renamed out of entries/ (atomically gone for readers)."""
        try:
            # contextlib.suppress: another process removed it first
            with self._staging() as doomed, contextlib.suppress(OSError):
                os.rename(entry, doomed / "entry")
        except _Unusable:
            with contextlib.suppress(OSError):
                _remove_path(entry)

    # --- statistics and pruning ------------------------------------------------------------

    def record_build(self, counts: BuildCounts) -> None:
        """Remember a build's hits and misses for :meth:`stats` (silently not, when the cache
        cannot be written: the build itself has succeeded)."""
        document = {
            "hits": counts.hits,
            "misses": counts.misses,
            "remote_hits": counts.remote_hits,
        }
        with contextlib.suppress(OSError, _Unusable):
            atomic_write_text(
                self._dir() / _LAST_BUILD, json.dumps(document, sort_keys=True) + "\n"
            )

    def stats(self) -> CacheStats:
        """Entry count, total size and the last recorded build's counts."""
        entries = self._entries()
        return CacheStats(
            root=self.root,
            entries=len(entries),
            size=sum(entry.size for entry in entries),
            last_build=self._last_build(),
        )

    def _last_build(self) -> BuildCounts | None:
        try:
            document = json.loads(read_regular(self._base / _LAST_BUILD, follow_symlinks=False))
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
        import filelock

        try:
            lock_path = self._dir("locks") / "prune.lock"
            self._clear_non_regular(lock_path)
        except _Unusable as trouble:
            raise OSError(f"compile cache {self.root} is unusable ({trouble})") from None
        with filelock.FileLock(lock_path, timeout=self.lock_timeout):
            entries = sorted(self._entries(), key=lambda entry: (entry.last_use, entry.path))
            total = sum(entry.size for entry in entries)
            removed: list[_Entry] = []
            for entry in entries:
                if total <= max_size:
                    break
                self._remove(entry.path)
                with contextlib.suppress(OSError):  # only if no other entry shares the key
                    entry.path.parent.rmdir()
                    entry.path.parent.parent.rmdir()  # and none the key's first two digits
                total -= entry.size
                removed.append(entry)
            self._remove_killed_staging()
            if max_size == 0:
                self._remove_older_layouts()
        return PruneResult(
            removed_entries=len(removed),
            removed_bytes=sum(entry.size for entry in removed),
            remaining_entries=len(entries) - len(removed),
            remaining_bytes=total,
        )

    def _entries(self) -> list[_Entry]:
        """Every entry folder, found without following a link (a link is not an entry)."""
        entries: list[_Entry] = []
        for entry in _real_subdirs(self._base / "entries", depth=3):
            try:
                files = [f for f in entry.iterdir() if f.is_file() and not f.is_symlink()]
                size = sum(f.lstat().st_size for f in files)
                manifest = entry / _MANIFEST
                last_use = (manifest if is_regular(manifest) else entry).lstat().st_mtime
            except OSError:
                continue  # removed meanwhile
            entries.append(_Entry(entry, last_use, size))
        return entries

    def _remove_older_layouts(self) -> None:
        """Remove the folders of other layouts (``v1`` beside ``v2``): no build of this version
        reads them, and emptying the cache must free what an older version left."""
        for folder in _real_subdirs(self.root, depth=1):
            if _LAYOUT_NAME.fullmatch(folder.name) and folder.name != LAYOUT:
                shutil.rmtree(folder, ignore_errors=True)

    def _remove_killed_staging(self) -> None:
        """Remove every staging folder no live process holds (their builds were killed)."""
        tmp = self._base / "tmp"
        if not self._existing_dir(tmp):
            return
        for work in sorted(tmp.iterdir()):
            try:
                fd = os.open(work, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                with contextlib.suppress(OSError):
                    _remove_path(work)  # a link or a file: never one of ours
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # in use by a running build
            else:
                shutil.rmtree(work, ignore_errors=True)
            finally:
                os.close(fd)


def _link_read(path: str, opened: os.stat_result, output: Path) -> bool:
    """Give the artifact ``path``, whose bytes were read and verified from the file of status
    ``opened``, the name ``output`` too (replacing what is there), as a hard link: a warm build
    then creates no file and copies no byte, where writing a new file costs many times reading
    it. The new name is checked to be that very file (same device and inode), not whatever
    ``path`` names by now. False, leaving nothing behind, where that cannot be done (another
    file system, a mode other than a build output's, a replaced entry): the caller then writes
    the bytes.
    """
    if stat.S_IMODE(opened.st_mode) != FILE_MODE:
        return False
    with contextlib.suppress(OSError):
        present = os.lstat(output)
        if (present.st_dev, present.st_ino) == (opened.st_dev, opened.st_ino):
            # Already that file (a rebuild in place): renaming a link onto another link of the
            # same file does nothing and would leave the temporary name behind.
            return True
    folder, _, name = os.fspath(output).rpartition("/")
    temporary = f"{folder}/.{name}.{os.getpid()}.{threading.get_ident()}.link"
    try:
        os.link(path, temporary, follow_symlinks=False)
    except OSError:
        return False
    try:
        linked = os.lstat(temporary)
        if (linked.st_dev, linked.st_ino) != (opened.st_dev, opened.st_ino):
            raise OSError(f"{path} was replaced")
        os.replace(temporary, output)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)  # the output became a link of the same file meanwhile
    return True


def _build_uncached(build: Callable[[Path], Built]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="pypto-build-") as stage:
        return read_regular(build(Path(stage)).artifact)


def _entry_name(key: str, own: Sequence[_Dependency], shared_sha256: str) -> str:
    """An entry's folder name: the key, its own dependencies and the hash of its shared ones,
    so one key holds one entry per set of header contents, and a manifest altered after
    publishing no longer matches. It is ``_digest_json([key, [dep.as_json() for dep in own],
    shared_sha256])``, spelled out from :attr:`_Dependency.canonical`."""
    canonical = f'[{encode_basestring_ascii(key)},{_listing(own)},"{shared_sha256}"]'
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _listing(dependencies: Sequence[_Dependency]) -> str:
    """``dependencies`` as :func:`_digest_json` spells their :meth:`~_Dependency.as_json`: the
    text of an entry's ``shared.json``, which is also valid JSON."""
    return "[" + ",".join([dep.canonical for dep in dependencies]) + "]"


def _remove_path(path: str | Path) -> None:
    """Remove ``path`` itself: a link is unlinked, never followed; a folder is removed with
    everything in it (rmtree follows no link either)."""
    if stat.S_ISDIR(os.lstat(path).st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _real_subdirs(root: Path, depth: int) -> list[Path]:
    """The folders ``depth`` levels below ``root``, through real folders only, sorted."""
    level = [root] if root.is_dir() and not root.is_symlink() else []
    for _ in range(depth):
        found: list[Path] = []
        for folder in level:
            with contextlib.suppress(OSError):
                found += [
                    Path(item.path)
                    for item in os.scandir(folder)
                    if item.is_dir(follow_symlinks=False)
                ]
        level = sorted(found)
    return level


def _parse_manifest(document: object, key: str) -> tuple[str, list[_Dependency]]:
    """The artifact hash and dependencies of a self-contained manifest (format
    :data:`FORMAT`, as the remote tier stores them); ValueError if malformed."""
    _, artifact, raw = _manifest_fields(document, key, FORMAT)
    return artifact, _parse_dependencies(raw)


def _parse_entry_manifest(document: object, key: str) -> tuple[str, list[_Dependency], str]:
    """The artifact hash, own dependencies and the claimed SHA-256 of ``shared.json`` of a
    local entry's manifest (format :data:`LAYOUT`); ValueError if malformed. The shared
    dependencies are checked by :meth:`FileDigests.match_shared`, once per build."""
    fields, artifact, raw = _manifest_fields(document, key, LAYOUT)
    shared_sha256 = fields.get("shared_sha256")
    if type(shared_sha256) is not str or len(fields) != 5:
        raise ValueError("malformed manifest")
    if _SHA256.fullmatch(shared_sha256) is None:
        raise ValueError("shared dependencies' hash is not a SHA-256")
    return artifact, _parse_dependencies(raw), shared_sha256


def _manifest_fields(
    document: object, key: str, format_: str
) -> tuple[dict[str, object], str, list[object]]:
    """A manifest of format ``format_`` and ``key`` as a dict, its artifact hash and its raw
    dependency list; ValueError otherwise."""
    if not isinstance(document, dict) or document.get("format") != format_:
        raise ValueError("not a cache entry manifest")
    if document.get("key") != key:
        raise ValueError("manifest of another key")
    artifact = document.get("artifact_sha256")
    raw = document.get("dependencies")
    if not isinstance(artifact, str) or not isinstance(raw, list):
        raise ValueError("malformed manifest")
    if _SHA256.fullmatch(artifact) is None:
        raise ValueError("artifact hash is not a SHA-256")
    return document, artifact, raw


def _parse_dependencies(raw: object) -> list[_Dependency]:
    """The recorded dependencies of a manifest's list (ValueError if malformed)."""
    if type(raw) is not list:
        raise ValueError("malformed manifest")
    # Exact types, as JSON gives them (``type(...) is`` costs less than ``isinstance``, and a
    # manifest lists a hundred dependencies or more).
    dependencies: list[_Dependency] = []
    for item in raw:
        # Three fields, no more, no fewer: those :meth:`_Dependency.as_json` writes.
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
def _dependency(path: str, in_tree: bool, digest: str) -> _Dependency:
    """A recorded dependency, checked (ValueError when malformed). Remembered, as a pure
    function of its fields: every entry of a sub-build records the same hundred-odd headers."""
    if _SHA256.fullmatch(digest) is None:
        raise ValueError("dependency hash is not a SHA-256")
    _check_dependency_path(path, in_tree)
    return _Dependency(path, in_tree, digest)


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


_SHA256 = re.compile(r"[0-9a-f]{64}")
_SIZE = re.compile(r"(?i)\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*")
_SIZE_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str) -> int:
    """A size in bytes from ``500M``, ``2G``, ``1.5GiB``, ``4096`` (as ccache spells them:
    a plain suffix is decimal, an ``i`` suffix binary)."""
    match = _SIZE.fullmatch(text)
    if match is None or (match.group(3) and not match.group(2)):
        raise ValueError(f"invalid size '{text}' (examples: 4096, 500M, 2G, 1.5GiB)")
    base = 1024 if match.group(3) else 1000
    return int(float(match.group(1)) * base ** _SIZE_POWERS[match.group(2).lower()])
