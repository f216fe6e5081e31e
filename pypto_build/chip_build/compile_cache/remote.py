"""The remote tier of the compile cache, over the HTTP remote-cache protocol.

The protocol is the one Bazel's ``--remote_cache=http://...`` speaks, and with it bazel-remote,
nginx's WebDAV module, ccache's and sccache's HTTP/WebDAV storage (the store's HTTP backend,
:mod:`pypto_build.store.http`): values under a base URL (which may end in an instance prefix,
such as a branch name), in two namespaces::

    <base>/ac/<compile key>   the key's entries: a JSON document listing, newest first, the
                              manifest of each local entry (artifact hash, the files the compile
                              read with their hashes) and the artifact's size
    <base>/cas/<sha256>       an artifact's bytes, named by their SHA-256

So any server users already run for Bazel, ccache or sccache serves pypto-build too. The local
folder stays the first tier (:mod:`.cache`): the remote is asked only on a local miss, its
entries are verified exactly as local ones (the manifest's shape and key, the recorded files'
hashes against this machine's files, the artifact's SHA-256 and size), and a verified hit is
stored locally. A compile's entry is uploaded on background threads (blob first, then the
``ac`` document, so a reader never finds a manifest before its blob), off the build's critical
path; :meth:`RemoteTier.flush` waits for the uploads at the end of a build.

A remote must never fail or stall a build. Every exchange is bounded as a whole by the timeout
(:mod:`pypto_build.store.http_deadline`), nothing is retried, and the first exchange with a
remote runs alone, so one that is down or hangs costs one timeout per build, not one per
compile job. Whatever goes wrong is one warning per remote and kind, and the build goes on:

* unreachable, timed out, an unexpected status (a 5xx, refused credentials): the remote is
  dropped for the rest of the build;
* a damaged entry (a malformed document, a blob whose hash or size is wrong): a miss, which the
  compile's upload then overwrites with a good entry;
* uploads refused (400, 401, 403, 405, 501 to a ``PUT``): reads go on, uploads stop.

Credentials never come from ``pyproject.toml`` (:mod:`pypto_build.store.http_credentials`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from pypto_build.chip_build import bounded_json
from pypto_build.store.http import HttpStorage, Refused
from pypto_build.store.http_credentials import auth_headers
from pypto_build.store.http_deadline import pool_manager
from pypto_build.store.read_only import ReadOnly
from pypto_build.store.storage import Damaged, Storage, Unavailable

#: The secret that signs uploaded entries, and that a remote with ``signed`` requires.
SIGNING_KEY_VARIABLE = "PYPTO_REMOTE_CACHE_SIGNING_KEY"
#: The ``ac`` document's format; a new format gets a new value and old documents become misses.
FORMAT = "pypto-build-remote-v1"
#: Entries one ``ac`` document keeps (one per set of header contents; the newest win).
MAX_ENTRIES = 8
#: The largest ``ac`` document read; an entry lists a few hundred headers at most.
_MAX_DOCUMENT = 4 << 20
#: The deepest ``ac`` document read: its entries' manifests nest five levels.
_MAX_DEPTH = 16
#: Upload threads; the work is waiting on the network.
_UPLOADERS = 2
#: Connections kept open per remote host.
_POOL_SIZE = 64

T = TypeVar("T")


@dataclass(frozen=True)
class RemoteSpec:
    """One remote cache: its base URL, whether to upload to it, the bound on each exchange in
    seconds, and whether it must present signed entries (:func:`entry_signature`)."""

    url: str
    read_only: bool = False
    timeout: float = 10.0
    signed: bool = False


def entry_signature(secret: bytes, key: str, entry: Mapping[str, object]) -> str:
    """The HMAC-SHA256, under ``secret``, of an ``ac`` entry of compile ``key``: over the key
    and the whole manifest but its signature (the artifact's SHA-256 and size, the files the
    compile read and their hashes), in canonical JSON. Whoever writes to the remote without the
    secret cannot make a reader that requires signatures take another binary, nor pair a
    signed binary with other recorded files."""
    signed = {name: value for name, value in entry.items() if name != "signature"}
    text = json.dumps({"entry": signed, "key": key}, sort_keys=True, separators=(",", ":"))
    return hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class RemoteSummary:
    """What one remote did during a build: entries uploaded, damaged entries met, and why it was
    dropped or stopped taking uploads (None when it worked)."""

    url: str
    read_only: bool
    uploaded: int
    damaged: int
    problem: str | None


class Remote:
    """One remote cache during one build: its storage (read-only for a ``read_only`` spec),
    health and warnings; ``secret`` signs its uploads and, for a ``signed`` remote, verifies
    its entries."""

    def __init__(
        self,
        spec: RemoteSpec,
        storage: Storage,
        warn: Callable[[str], None],
        secret: bytes | None = None,
    ):
        self.spec = spec
        self._secret = secret
        self._storage = storage
        self._warn = warn
        self._lock = threading.Lock()
        #: Held by the first exchange: the others wait for its outcome instead of each paying
        #: a timeout against a remote that is down.
        self._first = threading.Lock()
        self._healthy = False
        self._down = False
        self._uploads_refused = False
        self._warned: set[str] = set()
        self._problem: str | None = None
        self._uploaded = 0
        self._damaged = 0

    @property
    def writable(self) -> bool:
        return self._storage.writable and not (self._uploads_refused or self._down)

    def entries(self, key: str) -> list[RemoteEntry]:
        """The entries the remote holds for compile ``key``, newest first (none when it has no
        document, is down, or the document is damaged)."""
        if self.spec.signed and self._secret is None:
            self._drop(
                f"requires signed entries but {SIGNING_KEY_VARIABLE} is not set; building "
                "without it"
            )
            return []
        document = self._run(lambda: self._entries_document(key), f"ac/{key}")
        if document is None:
            return []
        entries = [RemoteEntry(self, key, manifest) for manifest in document]
        if not self.spec.signed:
            return entries
        trusted = [entry for entry in entries if self._signed(key, entry.manifest)]
        if len(trusted) != len(entries):
            self.damaged(f"ac/{key}", "an entry without a valid signature")
        return trusted

    def _signed(self, key: str, manifest: Mapping[str, object]) -> bool:
        assert self._secret is not None
        signature = manifest.get("signature")
        expected = entry_signature(self._secret, key, manifest)
        return isinstance(signature, str) and hmac.compare_digest(signature, expected)

    def _drop(self, reason: str) -> None:
        with self._lock:
            self._down = True
            self._problem = reason
        self._warn_once("down", reason)

    def _entries_document(self, key: str) -> list[dict[str, object]] | None:
        data = self._storage.get(f"ac/{key}", limit=_MAX_DOCUMENT)
        return None if data is None else _parse_entries(data, key)

    def artifact(self, sha256: str, size: int) -> bytes | None:
        """The blob ``cas/<sha256>``, verified: exactly ``size`` bytes hashing to ``sha256``."""

        # None when evicted: a plain miss.
        return self._run(
            lambda: self._storage.get(f"cas/{sha256}", limit=size, sha256=sha256), f"cas/{sha256}"
        )

    def upload(self, key: str, manifest: Mapping[str, object], data: bytes) -> None:
        """Store an entry: its blob, then the key's document with the entry first."""
        if not self.writable:
            return
        entry: dict[str, object] = {**manifest, "artifact_size": len(data)}
        if self._secret is not None:
            entry["signature"] = entry_signature(self._secret, key, entry)
        sha256 = str(manifest["artifact_sha256"])

        def put() -> bool:
            self._storage.put(f"cas/{sha256}", data)
            try:
                existing = self._entries_document(key) or []
            except Damaged:
                existing = []  # replaced by a good document below
            # An entry with the same recorded files is the one this upload supersedes.
            kept = [old for old in existing if old.get("dependencies") != entry["dependencies"]]
            document = {"entries": [entry, *kept][:MAX_ENTRIES], "format": FORMAT, "key": key}
            text = json.dumps(document, sort_keys=True, separators=(",", ":"))
            self._storage.put(f"ac/{key}", text.encode("utf-8"))
            return True

        if self._run(put, f"ac/{key}"):
            with self._lock:
                self._uploaded += 1

    def damaged(self, what: str, reason: str) -> None:
        """Note a damaged entry (a miss); the first one is a warning."""
        with self._lock:
            self._damaged += 1
        self._warn_once(
            "damaged",
            f"{what} is damaged ({reason}); compiling instead, and the compile's upload "
            "replaces it (further damaged entries are counted, not reported)",
        )

    def summary(self) -> RemoteSummary:
        with self._lock:
            return RemoteSummary(
                self.spec.url, self.spec.read_only, self._uploaded, self._damaged, self._problem
            )

    def _run(self, exchange: Callable[[], T], what: str) -> T | None:
        """``exchange()``, or None when the remote is down or the exchange fails (which is
        recorded and warned about here, never raised)."""
        if not self._healthy:
            with self._first:
                if not (self._healthy or self._down):
                    return self._guarded(exchange, what)
        if self._down:
            return None
        return self._guarded(exchange, what)

    def _guarded(self, exchange: Callable[[], T], what: str) -> T | None:
        try:
            result = exchange()
        except Damaged as exc:
            self._healthy = True
            self.damaged(what, str(exc))
            return None
        except Refused as exc:
            self._healthy = True
            self._uploads_refused = True
            self._problem = f"uploads refused: {exc}"
            hint = "" if self.spec.read_only else "; set remote-cache-read-only to only read"
            self._warn_once("refused", f"refuses uploads ({exc}); not uploading to it{hint}")
            return None
        except Unavailable as exc:
            self._down = True
            self._problem = str(exc)
            self._warn_once("down", f"{exc}; building without it for the rest of this build")
            return None
        self._healthy = True
        return result

    def _warn_once(self, kind: str, message: str) -> None:
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        self._warn(f"remote cache {self.spec.url}: {message}")


@dataclass(frozen=True)
class RemoteEntry:
    """One entry a remote listed for a key: its manifest, not yet verified."""

    remote: Remote
    key: str
    manifest: Mapping[str, object]

    def artifact(self, sha256: str) -> bytes | None:
        """The entry's artifact, verified against ``sha256`` and the recorded size."""
        size = self.manifest.get("artifact_size")
        if type(size) is not int or size < 0:
            self.damaged("no artifact size")
            return None
        return self.remote.artifact(sha256, size)

    def damaged(self, reason: str) -> None:
        self.remote.damaged(f"ac/{self.key}", reason)


def _parse_entries(data: bytes, key: str) -> list[dict[str, object]]:
    """The entries of an ``ac`` document; :class:`Damaged` when it is not one for ``key``."""
    try:
        document = bounded_json.loads(data, max_bytes=_MAX_DOCUMENT, max_depth=_MAX_DEPTH)
    except bounded_json.DocumentRefused as exc:
        raise Damaged(str(exc)) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise Damaged(f"not a {FORMAT} document")
    if document.get("key") != key:
        raise Damaged("the document of another key")
    entries = document.get("entries")
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise Damaged("malformed entry list")
    return entries


class RemoteTier:
    """The remotes of one build, in lookup order: typically one to read and write, and a
    read-only fallback (another branch's cache)."""

    def __init__(
        self,
        specs: Sequence[RemoteSpec],
        *,
        warn: Callable[[str], None],
        environ: Mapping[str, str] | None = None,
    ) -> None:
        environ = os.environ if environ is None else environ
        # One pool per host, kept alive across the build: a local miss costs a round trip, not
        # a new connection. Connections are opened on demand; the pool keeps enough for every
        # compile job and upload thread of a distributed build.
        self._pool = pool_manager(num_pools=4, maxsize=_POOL_SIZE)
        secret = environ.get(SIGNING_KEY_VARIABLE)
        self.remotes = tuple(
            Remote(
                spec,
                self._storage(spec, environ),
                warn,
                secret.encode("utf-8") if secret else None,
            )
            for spec in specs
        )
        self._uploads: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _storage(self, spec: RemoteSpec, environ: Mapping[str, str]) -> Storage:
        """The HTTP storage of ``spec``, read-only when the spec says so."""
        storage = HttpStorage(spec.url, spec.timeout, self._pool, auth_headers(spec.url, environ))
        return ReadOnly(storage) if spec.read_only else storage

    def entries(self, key: str) -> Iterator[RemoteEntry]:
        """Every remote's entries for ``key``, the first remote's first; each remote is asked
        only once the previous ones' entries have been tried."""
        for remote in self.remotes:
            yield from remote.entries(key)

    def upload(self, key: str, manifest: Mapping[str, object], data: bytes) -> None:
        """Queue the upload of a new entry to every writable remote; returns at once."""
        targets = [remote for remote in self.remotes if remote.writable]
        if not targets:
            return
        with self._lock:
            if self._uploads is None:
                self._uploads = ThreadPoolExecutor(_UPLOADERS, thread_name_prefix="pypto-upload")
            for remote in targets:
                self._uploads.submit(remote.upload, key, manifest, data)

    def flush(self) -> None:
        """Wait for the queued uploads (each bounded by its remote's timeout; none starts once
        its remote is dropped)."""
        with self._lock:
            uploads, self._uploads = self._uploads, None
        if uploads is not None:
            uploads.shutdown(wait=True)

    def summaries(self) -> tuple[RemoteSummary, ...]:
        return tuple(remote.summary() for remote in self.remotes)
