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

Layout (``v1`` is the format; a new format gets a new directory)::

    <root>/v1/entries/<key[:2]>/<key>/<entry>/{artifact, manifest.json}
    <root>/v1/tmp/              staging, on the same file system as entries/
    <root>/v1/locks/<key[:2]>/<key>.lock
    <root>/v1/last-build.json   hits and misses of the last recorded build

An entry is built in a staging directory, its manifest (with the artifact's SHA-256) written
last, and published with one atomic rename, so a reader sees a whole entry or none. Reads
verify the manifest and the artifact's hash; anything else is a miss and the entry is removed.
The per-key file lock only keeps two builders from compiling the same key at once; a lock that
cannot be had in time means compiling without the cache, never failing or hanging the build.
A hit refreshes the manifest's modification time, the "last use" that pruning evicts by.

An optional remote tier (:mod:`pypto_build.chip_build.remote_cache`) is asked on a local miss,
under the key's lock; its entries are verified as local ones are and a hit is published locally
like a compile. Every entry this cache publishes from a compile is queued for upload.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import filelock

from pypto_build.chip_build.fs import atomic_write_text, sha256_file
from pypto_build.chip_build.remote_cache import RemoteTier

FORMAT = "v1"
#: How cache keys and entries name pypto-build's package folder.
PACKAGE_PLACEHOLDER = "/@pypto_build"


@dataclass(frozen=True)
class PackageFolder:
    """pypto-build's package folder as installed here, and its placeholder spelling."""

    root: Path

    def portable(self, text: str) -> str:
        """``text`` (a path, or an argument holding one) with the folder as the placeholder."""
        return re.sub(re.escape(str(self.root)) + r"(?=/|$)", PACKAGE_PLACEHOLDER, text)

    def local(self, text: str) -> str:
        """The inverse of :meth:`portable`, for this installation."""
        return re.sub(re.escape(PACKAGE_PLACEHOLDER) + r"(?=/|$)", str(self.root), text)


#: This installation: the parent of ``chip_build``.
PACKAGE = PackageFolder(Path(__file__).resolve().parents[1])
_MANIFEST = "manifest.json"
_ARTIFACT = "artifact"
_LAST_BUILD = "last-build.json"
#: Staging directories older than this are leftovers of a killed build; prune removes them.
_STALE_STAGING_SECONDS = 24 * 3600


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$PYPTO_CACHE_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/pypto-build``."""
    environ = os.environ if environ is None else environ
    if environ.get("PYPTO_CACHE_DIR"):
        return Path(environ["PYPTO_CACHE_DIR"])
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pypto-build"


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


def read_depfile(depfile: Path, cwd: Path) -> tuple[Path, ...]:
    """The prerequisites of a make-style dependency file (``-MD -MF``), as absolute paths.

    Relative paths are relative to ``cwd``, where the compiler ran. Handles line continuations,
    backslash-escaped spaces and ``$$``; the rule's target is dropped.
    """
    text = depfile.read_text(encoding="utf-8", errors="surrogateescape")
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    words: list[str] = []
    current: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in " #":
            current.append(text[index + 1])
            index += 2
            continue
        if char == "$" and text.startswith("$$", index):
            current.append("$")
            index += 2
            continue
        if char.isspace():
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
        index += 1
    if current:
        words.append("".join(current))
    prerequisites: list[Path] = []
    for word in words:
        if word.endswith(":"):  # a target ("out.so:"); everything else is a prerequisite
            continue
        path = Path(word)
        normalized = Path(os.path.normpath(path if path.is_absolute() else cwd / path))
        if normalized not in prerequisites:
            prerequisites.append(normalized)
    return tuple(prerequisites)


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

    def resolve(self, tree: Path) -> Path:
        if self.in_tree:
            return tree / self.path
        return Path(PACKAGE.local(self.path))

    def as_json(self) -> dict[str, object]:
        return {"in_tree": self.in_tree, "path": self.path, "sha256": self.sha256}


@dataclass(frozen=True)
class _Entry:
    path: Path
    last_use: float
    size: int


class CompileCache:
    """The cache at ``root`` (see the module docstring)."""

    def __init__(
        self, root: Path, *, lock_timeout: float = 600.0, remote: RemoteTier | None = None
    ) -> None:
        self.root = root
        self.lock_timeout = lock_timeout
        self.remote = remote
        self._base = root / FORMAT
        # File hashes by (path, size, mtime, inode): dependency checks of many kernels share
        # the same headers. Files are not expected to change during one build.
        self._hashes: dict[tuple[str, int, int, int], str] = {}

    # --- compile ---------------------------------------------------------------------------

    def fetch_or_build(self, key: str, tree: Path, build: Callable[[Path], Built]) -> Fetched:
        """The artifact for compile ``key`` of a source in ``tree``: a valid entry whose
        dependencies are unchanged, else ``build(staging_dir)`` run and published."""
        data = self._lookup(key, tree)
        if data is not None:
            return Fetched(data, hit=True)
        lock_path = self._base / "locks" / key[:2] / f"{key}.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with filelock.FileLock(lock_path, timeout=self.lock_timeout):
                data = self._lookup(key, tree)  # another builder may have just published it
                if data is not None:
                    return Fetched(data, hit=True)
                data = self._remote_lookup(key, tree)
                if data is not None:
                    return Fetched(data, hit=True, remote=True)
                return Fetched(self._build_and_publish(key, tree, build), hit=False)
        except filelock.Timeout:
            with self._staging() as work:
                return Fetched(build(work).artifact.read_bytes(), hit=False)

    @contextlib.contextmanager
    def fetch_or_build_file(
        self, key: str, tree: Path, build: Callable[[Path], Built], name: str
    ) -> Iterator[Path]:
        """:meth:`fetch_or_build`, for a consumer that needs the artifact as a file (the
        dynamic loader): a private copy named ``name``, beside the entries and removed when the
        context exits. The entry stays the only lasting copy, so what :meth:`stats` counts and
        :meth:`prune` evicts is everything the cache holds."""
        data = self.fetch_or_build(key, tree, build).data
        with self._staging() as work:
            path = work / name
            path.write_bytes(data)
            yield path

    def _key_dir(self, key: str) -> Path:
        return self._base / "entries" / key[:2] / key

    def _lookup(self, key: str, tree: Path) -> bytes | None:
        key_dir = self._key_dir(key)
        try:
            candidates = sorted(key_dir.iterdir())
        except OSError:
            return None
        for entry in candidates:
            try:
                manifest = json.loads((entry / _MANIFEST).read_text(encoding="utf-8"))
                artifact, dependencies = _parse_manifest(manifest, key)
            except FileNotFoundError:
                if entry.exists():  # an entry without a manifest was never published whole
                    self._remove(entry)
                continue
            except (OSError, ValueError):  # json.JSONDecodeError is a ValueError
                self._remove(entry)
                continue
            if not all(self._matches(dep, tree) for dep in dependencies):
                continue
            try:
                data = (entry / _ARTIFACT).read_bytes()
            except OSError:
                self._remove(entry)
                continue
            if hashlib.sha256(data).hexdigest() != artifact:
                self._remove(entry)
                continue
            with contextlib.suppress(OSError):  # pruned meanwhile: the bytes are still good
                os.utime(entry / _MANIFEST)
            return data
        return None

    def _matches(self, dependency: _Dependency, tree: Path) -> bool:
        return self._file_hash(dependency.resolve(tree)) == dependency.sha256

    def _file_hash(self, path: Path) -> str | None:
        try:
            status = path.stat()
        except OSError:
            return None
        memo_key = (str(path), status.st_size, status.st_mtime_ns, status.st_ino)
        digest = self._hashes.get(memo_key)
        if digest is None:
            digest = sha256_file(path)
            self._hashes[memo_key] = digest
        return digest

    def _remote_lookup(self, key: str, tree: Path) -> bytes | None:
        """The artifact of the first remote entry whose manifest is sound and whose recorded
        files all have their recorded hashes here, published locally; None on a miss."""
        if self.remote is None:
            return None
        for entry in self.remote.entries(key):
            try:
                artifact, dependencies = _parse_manifest(entry.manifest, key)
            except ValueError as exc:
                entry.damaged(str(exc))
                continue
            if not all(self._matches(dep, tree) for dep in dependencies):
                continue
            data = entry.artifact(artifact)
            if data is not None:
                with self._staging() as work:
                    self._publish(work, key, data, dependencies)
                return data
        return None

    def flush(self) -> None:
        """Wait for the remote tier's uploads (a no-op without one); a build calls this last."""
        if self.remote is not None:
            self.remote.flush()

    def _build_and_publish(self, key: str, tree: Path, build: Callable[[Path], Built]) -> bytes:
        with self._staging() as work:
            staging = work / "build"
            staging.mkdir()
            built = build(staging)
            data = built.artifact.read_bytes()
            recorded = [self._record(path, tree) for path in built.dependencies]
            dependencies = [dep for dep in recorded if dep is not None]
            if len(dependencies) != len(recorded):
                # A file the compiler read is gone: nothing could verify this entry later.
                return data
            manifest = self._publish(work, key, data, dependencies)
        if self.remote is not None:
            self.remote.upload(key, manifest, data)
        return data

    def _publish(
        self, work: Path, key: str, data: bytes, dependencies: Sequence[_Dependency]
    ) -> dict[str, object]:
        """Publish ``data`` as an entry of ``key`` (staged in ``work``, manifest last, one
        rename) and return its manifest."""
        entry = work / "entry"
        entry.mkdir()
        (entry / _ARTIFACT).write_bytes(data)
        manifest: dict[str, object] = {
            "artifact_sha256": hashlib.sha256(data).hexdigest(),
            "dependencies": [dep.as_json() for dep in dependencies],
            "format": FORMAT,
            "key": key,
        }
        atomic_write_text(
            entry / _MANIFEST, json.dumps(manifest, indent=1, sort_keys=True), fsync=True
        )
        name = _digest_json([key, manifest["dependencies"]])
        final = self._key_dir(key) / name
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.rename(entry, final)
        except OSError:
            pass  # the same entry is already published, or a prune removed the key dir
        return manifest

    def _record(self, path: Path, tree: Path) -> _Dependency | None:
        digest = self._file_hash(path)
        if digest is None:
            return None
        if path.is_relative_to(tree):
            return _Dependency(path.relative_to(tree).as_posix(), True, digest)
        return _Dependency(PACKAGE.portable(str(path)), False, digest)

    @contextlib.contextmanager
    def _staging(self) -> Iterator[Path]:
        """A private directory beside the entries (same file system: renames are atomic)."""
        tmp = self._base / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=tmp))
        try:
            yield work
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _remove(self, entry: Path) -> None:
        """Remove an entry: first renamed out of entries/ (atomically gone for readers)."""
        tmp = self._base / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        doomed = Path(tempfile.mkdtemp(dir=tmp))
        with contextlib.suppress(OSError):  # another process removed it first
            os.rename(entry, doomed / "entry")
        shutil.rmtree(doomed, ignore_errors=True)

    # --- statistics and pruning ------------------------------------------------------------

    def record_build(self, counts: BuildCounts) -> None:
        """Remember a build's hits and misses for :meth:`stats`."""
        document = {
            "hits": counts.hits,
            "misses": counts.misses,
            "remote_hits": counts.remote_hits,
        }
        atomic_write_text(self._base / _LAST_BUILD, json.dumps(document, sort_keys=True) + "\n")

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
            document = json.loads((self._base / _LAST_BUILD).read_text(encoding="utf-8"))
            return BuildCounts(
                hits=int(document["hits"]),
                misses=int(document["misses"]),
                remote_hits=int(document.get("remote_hits", 0)),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def prune(self, max_size: int) -> PruneResult:
        """Evict least recently used entries until the entries total at most ``max_size``
        bytes (0 empties the cache); also drops staging left behind by killed builds."""
        lock_path = self._base / "locks" / "prune.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
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
                total -= entry.size
                removed.append(entry)
            self._remove_stale_staging()
        return PruneResult(
            removed_entries=len(removed),
            removed_bytes=sum(entry.size for entry in removed),
            remaining_entries=len(entries) - len(removed),
            remaining_bytes=total,
        )

    def _entries(self) -> list[_Entry]:
        entries: list[_Entry] = []
        root = self._base / "entries"
        if not root.is_dir():
            return entries
        for entry in sorted(root.glob("*/*/*")):
            try:
                size = sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
                manifest = entry / _MANIFEST
                last_use = (manifest if manifest.exists() else entry).stat().st_mtime
            except OSError:
                continue  # removed meanwhile
            entries.append(_Entry(entry, last_use, size))
        return entries

    def _remove_stale_staging(self) -> None:
        tmp = self._base / "tmp"
        if not tmp.is_dir():
            return
        cutoff = time.time() - _STALE_STAGING_SECONDS
        for work in sorted(tmp.iterdir()):
            with contextlib.suppress(OSError):
                if work.stat().st_mtime < cutoff:
                    shutil.rmtree(work, ignore_errors=True)


def _parse_manifest(document: object, key: str) -> tuple[str, list[_Dependency]]:
    """The artifact hash and dependencies of an entry manifest, local or remote; ValueError if
    malformed."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a cache entry manifest")
    if document.get("key") != key:
        raise ValueError("manifest of another key")
    artifact = document.get("artifact_sha256")
    raw = document.get("dependencies")
    if not isinstance(artifact, str) or not isinstance(raw, list):
        raise ValueError("malformed manifest")
    if _SHA256.fullmatch(artifact) is None:
        raise ValueError("artifact hash is not a SHA-256")
    dependencies: list[_Dependency] = []
    for item in raw:
        if not isinstance(item, dict):
            raise ValueError("malformed dependency")
        path, in_tree, digest = item.get("path"), item.get("in_tree"), item.get("sha256")
        if not (isinstance(path, str) and isinstance(in_tree, bool) and isinstance(digest, str)):
            raise ValueError("malformed dependency")
        dependencies.append(_Dependency(path, in_tree, digest))
    return artifact, dependencies


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
