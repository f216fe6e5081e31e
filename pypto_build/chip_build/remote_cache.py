"""The remote tier of the compile cache, over the HTTP remote-cache protocol.

The protocol is the one Bazel's ``--remote_cache=http://...`` speaks, and with it bazel-remote,
nginx's WebDAV module, ccache's and sccache's HTTP/WebDAV storage: values are read with ``GET``
and written with ``PUT`` under a base URL (which may end in an instance prefix, such as a
branch name), in two namespaces::

    <base>/ac/<compile key>   the key's entries: a JSON document listing, newest first, the
                              manifest of each local entry (artifact hash, the files the compile
                              read with their hashes) and the artifact's size
    <base>/cas/<sha256>       an artifact's bytes, named by their SHA-256

So any server users already run for Bazel, ccache or sccache serves pypto-build too. The local
folder stays the first tier (:mod:`pypto_build.chip_build.cache`): the remote is asked only on
a local miss, its entries are verified exactly as local ones (the manifest's shape and key, the
recorded files' hashes against this machine's files, the artifact's SHA-256 and size), and a
verified hit is stored locally. A compile's entry is uploaded on background threads (blob first,
then the ``ac`` document, so a reader never finds a manifest before its blob), off the build's
critical path; :meth:`RemoteTier.flush` waits for the uploads at the end of a build.

A remote must never fail or stall a build. Every exchange is bounded as a whole by the timeout
(connecting, the status line and headers, the whole body, the answer to an upload: one deadline
from the start of the request, :mod:`~pypto_build.chip_build.remote_deadline`), nothing is
retried, and the
first exchange with a remote runs alone, so one that is down or hangs costs one timeout per
build, not one per compile job. Whatever goes wrong is one warning per remote and kind, and
the build goes on:

* unreachable, timed out, an unexpected status (a 5xx, refused credentials): the remote is
  dropped for the rest of the build;
* a damaged entry (a malformed document, a blob whose hash or size is wrong): a miss, which the
  compile's upload then overwrites with a good entry;
* uploads refused (400, 401, 403, 405, 501 to a ``PUT``): reads go on, uploads stop.

Credentials never come from ``pyproject.toml``: a bearer token from
``PYPTO_REMOTE_CACHE_TOKEN``, a user name and password from ``PYPTO_REMOTE_CACHE_USERNAME`` and
``PYPTO_REMOTE_CACHE_PASSWORD``, else the remote's host in the netrc file (``$NETRC``, else
``~/.netrc``).

The client is urllib3: a widely used, actively maintained HTTP/1.1 client with thread-safe
connection pooling (keep-alive across the build's many small exchanges), explicit connect and
read timeouts and no retries unless asked, and no dependencies of its own, which keeps the build
environment of every model package lean.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import netrc
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from pypto_build.chip_build import bounded_json
from pypto_build.chip_build.remote_deadline import Deadline, pool_manager

if TYPE_CHECKING:
    import urllib3

TOKEN_VARIABLE = "PYPTO_REMOTE_CACHE_TOKEN"
USERNAME_VARIABLE = "PYPTO_REMOTE_CACHE_USERNAME"
PASSWORD_VARIABLE = "PYPTO_REMOTE_CACHE_PASSWORD"
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
#: Statuses of a ``PUT`` that mean "this server takes no uploads from you", not "it is down".
_REFUSED = frozenset({401, 403, 405, 501})
_CHUNK = 1 << 16
#: Upload threads; the work is waiting on the network.
_UPLOADERS = 2
#: Connections kept open per remote host.
_POOL_SIZE = 64
#: Failures of an exchange that mean the remote is unreachable or broke the connection.

T = TypeVar("T")


def url_problem(url: str) -> str | None:
    """What is wrong with a remote cache URL, or None: an ``http``/``https`` URL with a host,
    and no user name, password, query or fragment (credentials come from the environment or
    netrc, never from a setting)."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # parsing the port validates it
    except ValueError as exc:
        return f"'{url}' is not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"'{url}' is not an http:// or https:// URL with a host"
    if parts.username is not None or parts.password is not None:
        return (
            f"'{url}' carries credentials; they are never read from settings: set "
            f"{USERNAME_VARIABLE} and {PASSWORD_VARIABLE}, or {TOKEN_VARIABLE}, in the "
            "environment, or put the host in ~/.netrc"
        )
    if parts.query or parts.fragment:
        return f"'{url}' has a query or fragment; give the base URL of the ac/ and cas/ folders"
    return None


def auth_headers(url: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The ``Authorization`` header for ``url`` from the environment or the netrc file (none
    when neither has credentials). An unreadable netrc file is no credentials, as for curl."""
    token = environ.get(TOKEN_VARIABLE)
    if token:
        return {"Authorization": f"Bearer {token}"}
    user, password = environ.get(USERNAME_VARIABLE), environ.get(PASSWORD_VARIABLE)
    if not user and not password:
        path = environ.get("NETRC") or str(Path(environ.get("HOME") or Path.home()) / ".netrc")
        host = urlsplit(url).hostname or ""
        try:
            found = netrc.netrc(path).authenticators(host)
        except (OSError, netrc.NetrcParseError):
            found = None
        if found is None:
            return {}
        user, _, password = found
    pair = f"{user or ''}:{password or ''}".encode()
    return {"Authorization": f"Basic {base64.b64encode(pair).decode('ascii')}"}


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


class _Unavailable(Exception):
    """The remote did not answer as a cache answers (transport failure or unexpected status)."""


class _UploadRefused(Exception):
    """The remote answered a ``PUT`` with a refusal."""


class _Damaged(Exception):
    """The remote answered, but with a value that cannot be what was stored."""


class _Exchange:
    """HTTP exchanges with one remote, each bounded as a whole by the timeout (see the module and
    :mod:`~pypto_build.chip_build.remote_deadline`)."""

    def __init__(self, spec: RemoteSpec, pool: urllib3.PoolManager, headers: dict[str, str]):
        import urllib3

        #: What a transport failure raises: urllib3's errors and the system's.
        self._failures = (urllib3.exceptions.HTTPError, OSError)
        self._timeout_class = urllib3.Timeout
        self.base = spec.url.rstrip("/")
        self.timeout = spec.timeout
        self._pool = pool
        self._headers = headers

    def get(self, path: str, limit: int) -> bytes | None:
        """The value at ``<base>/<path>``, or None when the server has none (404). A value over
        ``limit`` bytes is damaged."""
        with Deadline(self.timeout) as deadline:
            response = self._request("GET", path, None, deadline)
            try:
                data = self._body(response, path, limit, deadline)
            except BaseException:
                response.close()  # unread bytes must not reach the next exchange on the connection
                raise
            finally:
                response.release_conn()
        return data

    def _body(
        self, response: urllib3.BaseHTTPResponse, path: str, limit: int, deadline: Deadline
    ) -> bytes | None:
        if response.status == 404:
            return None
        if response.status in (401, 403):
            raise _Unavailable(
                f"GET {path} answered HTTP {response.status}: credentials missing or refused "
                f"({TOKEN_VARIABLE}, {USERNAME_VARIABLE} and {PASSWORD_VARIABLE}, or netrc)"
            )
        if response.status != 200:
            raise _Unavailable(f"GET {path} answered HTTP {response.status}")
        length = response.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise _Damaged(f"{path} holds {length} bytes, at most {limit} expected")
        chunks: list[bytes] = []
        size = 0
        try:
            while chunk := response.read(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise _Damaged(f"{path} holds more than the {limit} bytes expected")
                chunks.append(chunk)
        except self._failures as exc:
            raise self._failure("GET", path, exc, deadline) from None
        if deadline.expired:  # cut off between two reads, or at the very end
            raise self._failure("GET", path, None, deadline)
        return b"".join(chunks)

    def put(self, path: str, data: bytes) -> None:
        with Deadline(self.timeout) as deadline:
            response = self._request("PUT", path, data, deadline)
            try:
                response.drain_conn()
            except self._failures as exc:
                raise self._failure("PUT", path, exc, deadline) from None
            finally:
                response.release_conn()
            if deadline.expired:
                raise self._failure("PUT", path, None, deadline)
        if response.status == 400:
            # bazel-remote validates ac/ values as Bazel ActionResults unless told not to.
            raise _UploadRefused(
                f"PUT {path} answered HTTP 400 (bazel-remote takes pypto-build's entries only "
                "when started with --disable_http_ac_validation)"
            )
        if response.status in _REFUSED:
            raise _UploadRefused(f"PUT {path} answered HTTP {response.status}")
        if not 200 <= response.status < 300:
            raise _Unavailable(f"PUT {path} answered HTTP {response.status}")

    def _request(
        self, method: str, path: str, body: bytes | None, deadline: Deadline
    ) -> urllib3.BaseHTTPResponse:
        # Each system call is bounded by what is left of the deadline as well, so a remote that
        # goes quiet is cut off at the deadline even before the watchdog fires.
        left = deadline.remaining()
        try:
            return self._pool.request(
                method,
                f"{self.base}/{path}",
                body=body,
                headers=self._headers,
                preload_content=False,
                redirect=False,
                retries=False,
                timeout=self._timeout_class(connect=left, read=left),
            )
        except self._failures as exc:
            raise self._failure(method, path, exc, deadline) from None

    def _failure(
        self, method: str, path: str, exc: Exception | None, deadline: Deadline
    ) -> _Unavailable:
        """The error of an exchange that failed or ran out of time (a per-call timeout at the
        deadline reads as the deadline, not as the call that happened to be waiting)."""
        if exc is None or deadline.expired or deadline.remaining() <= 0.001:
            return _Unavailable(f"{method} {path} took longer than {self.timeout:g} s")
        return _Unavailable(f"{method} {path}: {_reason(exc)}")


def _reason(exc: Exception) -> str:
    """What went wrong in a urllib3 error, without the connection's description urllib3 puts
    first ("Failed to establish a new connection: [Errno 111] Connection refused", "Read timed
    out. (read timeout=2.0)")."""
    reason = getattr(exc, "reason", None)
    text = str(reason if isinstance(reason, Exception) else exc)
    prefix, separator, rest = text.partition("): ")
    return rest if separator and prefix.startswith(("HTTPConnection", "HTTPSConnection")) else text


class Remote:
    """One remote cache during one build: its exchanges, health and warnings; ``secret`` signs
    its uploads and, for a ``signed`` remote, verifies its entries."""

    def __init__(
        self,
        spec: RemoteSpec,
        exchange: _Exchange,
        warn: Callable[[str], None],
        secret: bytes | None = None,
    ):
        self.spec = spec
        self._secret = secret
        self._exchange = exchange
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
        return not (self.spec.read_only or self._uploads_refused or self._down)

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
        data = self._exchange.get(f"ac/{key}", _MAX_DOCUMENT)
        return None if data is None else _parse_entries(data, key)

    def artifact(self, sha256: str, size: int) -> bytes | None:
        """The blob ``cas/<sha256>``, verified: exactly ``size`` bytes hashing to ``sha256``."""

        def get() -> bytes | None:
            data = self._exchange.get(f"cas/{sha256}", size)
            if data is None:
                return None  # evicted: a plain miss
            if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
                raise _Damaged(f"cas/{sha256} does not hash to its name")
            return data

        return self._run(get, f"cas/{sha256}")

    def upload(self, key: str, manifest: Mapping[str, object], data: bytes) -> None:
        """Store an entry: its blob, then the key's document with the entry first."""
        if not self.writable:
            return
        entry: dict[str, object] = {**manifest, "artifact_size": len(data)}
        if self._secret is not None:
            entry["signature"] = entry_signature(self._secret, key, entry)
        sha256 = str(manifest["artifact_sha256"])

        def put() -> bool:
            self._exchange.put(f"cas/{sha256}", data)
            try:
                existing = self._entries_document(key) or []
            except _Damaged:
                existing = []  # replaced by a good document below
            # An entry with the same recorded files is the one this upload supersedes.
            kept = [old for old in existing if old.get("dependencies") != entry["dependencies"]]
            document = {"entries": [entry, *kept][:MAX_ENTRIES], "format": FORMAT, "key": key}
            text = json.dumps(document, sort_keys=True, separators=(",", ":"))
            self._exchange.put(f"ac/{key}", text.encode("utf-8"))
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
        except _Damaged as exc:
            self._healthy = True
            self.damaged(what, str(exc))
            return None
        except _UploadRefused as exc:
            self._healthy = True
            self._uploads_refused = True
            self._problem = f"uploads refused: {exc}"
            hint = "" if self.spec.read_only else "; set remote-cache-read-only to only read"
            self._warn_once("refused", f"refuses uploads ({exc}); not uploading to it{hint}")
            return None
        except _Unavailable as exc:
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
    """The entries of an ``ac`` document; :class:`_Damaged` when it is not one for ``key``."""
    try:
        document = bounded_json.loads(data, max_bytes=_MAX_DOCUMENT, max_depth=_MAX_DEPTH)
    except bounded_json.DocumentRefused as exc:
        raise _Damaged(str(exc)) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise _Damaged(f"not a {FORMAT} document")
    if document.get("key") != key:
        raise _Damaged("the document of another key")
    entries = document.get("entries")
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise _Damaged("malformed entry list")
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
                _Exchange(spec, self._pool, auth_headers(spec.url, environ)),
                warn,
                secret.encode("utf-8") if secret else None,
            )
            for spec in specs
        )
        self._uploads: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

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
