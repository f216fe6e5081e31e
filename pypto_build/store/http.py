"""The store on a server of the HTTP remote-cache protocol: the backend of the compile cache's
remote tier.

The protocol is the one Bazel's ``--remote_cache=http://...`` speaks, and with it bazel-remote,
nginx's WebDAV module, ccache's and sccache's HTTP/WebDAV storage: values are read with ``GET``
and written with ``PUT`` under a base URL (which may end in an instance prefix, such as a
branch name); a 404 is a miss. The client names the values (the remote tier's ``ac/`` and
``cas/`` namespaces, :mod:`pypto_build.chip_build.compile_cache.remote`).

Every exchange is bounded as a whole by the timeout (connecting, the status line and headers,
the whole body, the answer to an upload: one deadline from the start of the request,
:mod:`.http_deadline`), and nothing is retried. What goes wrong is raised for the client to
weigh: :class:`~.storage.Unavailable` (unreachable, timed out, an unexpected status),
:class:`Refused` (a ``PUT`` refused: reads may go on), :class:`~.storage.Damaged` (a value
larger than asked for, or one that does not hash to its name).

The client is urllib3: a widely used, actively maintained HTTP/1.1 client with thread-safe
connection pooling (keep-alive across the build's many small exchanges), explicit connect and
read timeouts and no retries unless asked, and no dependencies of its own, which keeps the build
environment of every model package lean.
"""

from __future__ import annotations

import hashlib
import sys
from typing import TYPE_CHECKING

from pypto_build.errors import PyptoError
from pypto_build.store.http_credentials import (
    PASSWORD_VARIABLE,
    TOKEN_VARIABLE,
    USERNAME_VARIABLE,
)
from pypto_build.store.http_deadline import Deadline
from pypto_build.store.storage import Damaged, Unavailable

if TYPE_CHECKING:
    import urllib3

#: Statuses of a ``PUT`` that mean "this server takes no uploads from you", not "it is down".
_REFUSED = frozenset({401, 403, 405, 501})
_CHUNK = 1 << 16


class Refused(PyptoError):
    """The remote answered a ``PUT`` with a refusal."""


class HttpStorage:
    """The values under the base URL ``url``, each exchange bounded as a whole by ``timeout``
    seconds (see the module and :mod:`.http_deadline`), over the connections of ``pool`` with
    ``headers`` (the credentials, :func:`~.http_credentials.auth_headers`)."""

    def __init__(
        self, url: str, timeout: float, pool: urllib3.PoolManager, headers: dict[str, str]
    ):
        import urllib3

        #: What a transport failure raises: urllib3's errors and the system's.
        self._failures = (urllib3.exceptions.HTTPError, OSError)
        self._timeout_class = urllib3.Timeout
        self.base = url.rstrip("/")
        self.timeout = timeout
        self._pool = pool
        self._headers = headers

    @property
    def writable(self) -> bool:
        return True

    def get(
        self, name: str, *, limit: int | None = None, sha256: str | None = None
    ) -> bytes | None:
        """The value at ``<base>/<name>``, or None when the server has none (404). A value over
        ``limit`` bytes, or one that does not hash to ``sha256``, is damaged."""
        with Deadline(self.timeout) as deadline:
            response = self._request("GET", name, None, deadline)
            try:
                data = self._body(response, name, sys.maxsize if limit is None else limit, deadline)
            except BaseException:
                response.close()  # unread bytes must not reach the next exchange on the connection
                raise
            finally:
                response.release_conn()
        if data is not None and sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise Damaged(f"{name} does not hash to its name")
        return data

    def _body(
        self, response: urllib3.BaseHTTPResponse, path: str, limit: int, deadline: Deadline
    ) -> bytes | None:
        if response.status == 404:
            return None
        if response.status in (401, 403):
            raise Unavailable(
                f"GET {path} answered HTTP {response.status}: credentials missing or refused "
                f"({TOKEN_VARIABLE}, {USERNAME_VARIABLE} and {PASSWORD_VARIABLE}, or netrc)"
            )
        if response.status != 200:
            raise Unavailable(f"GET {path} answered HTTP {response.status}")
        length = response.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise Damaged(f"{path} holds {length} bytes, at most {limit} expected")
        chunks: list[bytes] = []
        size = 0
        try:
            while chunk := response.read(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise Damaged(f"{path} holds more than the {limit} bytes expected")
                chunks.append(chunk)
        except self._failures as exc:
            raise self._failure("GET", path, exc, deadline) from None
        if deadline.expired:  # cut off between two reads, or at the very end
            raise self._failure("GET", path, None, deadline)
        return b"".join(chunks)

    def put(self, path: str, data: bytes) -> None:
        """Store ``data`` at ``<base>/<path>`` (the server's ``PUT`` replaces a value whole)."""
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
            raise Refused(
                f"PUT {path} answered HTTP 400 (bazel-remote takes pypto-build's entries only "
                "when started with --disable_http_ac_validation)"
            )
        if response.status in _REFUSED:
            raise Refused(f"PUT {path} answered HTTP {response.status}")
        if not 200 <= response.status < 300:
            raise Unavailable(f"PUT {path} answered HTTP {response.status}")

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
    ) -> Unavailable:
        """The error of an exchange that failed or ran out of time (a per-call timeout at the
        deadline reads as the deadline, not as the call that happened to be waiting)."""
        if exc is None or deadline.expired or deadline.remaining() <= 0.001:
            return Unavailable(f"{method} {path} took longer than {self.timeout:g} s")
        return Unavailable(f"{method} {path}: {_reason(exc)}")


def _reason(exc: Exception) -> str:
    """What went wrong in a urllib3 error, without the connection's description urllib3 puts
    first ("Failed to establish a new connection: [Errno 111] Connection refused", "Read timed
    out. (read timeout=2.0)")."""
    reason = getattr(exc, "reason", None)
    text = str(reason if isinstance(reason, Exception) else exc)
    prefix, separator, rest = text.partition("): ")
    return rest if separator and prefix.startswith(("HTTPConnection", "HTTPSConnection")) else text
