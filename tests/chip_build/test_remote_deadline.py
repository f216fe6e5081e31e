"""A remote that trickles its answer, one byte at a time so that no single read ever waits
long, is cut off by the deadline over the whole exchange: against a scripted server on loopback
(:func:`_support.loopback.trickling_server`), the lookup and the upload each end within the
timeout (plus slack for a busy machine) with one warning."""

from __future__ import annotations

import time

import pytest
from _support.loopback import LOOPBACK, trickling_server

from pypto_build.chip_build.compile_cache.remote import RemoteSpec, RemoteTier

TIMEOUT = 1.0
#: A loaded machine's slack beyond the timeout; a trickle is never cut by the per-read timeout.
SLACK = 1.5
MANIFEST = {"artifact_sha256": "0" * 64, "dependencies": []}


@pytest.mark.parametrize("phase", ["status", "headers", "body"])
def test_a_lookup_that_trickles_ends_at_the_deadline(phase: str) -> None:
    warnings: list[str] = []
    with trickling_server(phase) as port:
        url = f"http://{LOOPBACK}:{port}/cache"
        remote = RemoteTier([RemoteSpec(url, timeout=TIMEOUT)], warn=warnings.append, environ={})
        start = time.monotonic()
        assert list(remote.entries("k" * 64)) == []
        elapsed = time.monotonic() - start
    assert elapsed < TIMEOUT + SLACK, elapsed
    assert warnings == [
        f"remote cache {url}: GET ac/{'k' * 64} took longer than 1 s; building without it for "
        "the rest of this build"
    ]


def test_an_upload_whose_answer_trickles_ends_at_the_deadline() -> None:
    warnings: list[str] = []
    with trickling_server("upload") as port:
        url = f"http://{LOOPBACK}:{port}/cache"
        remote = RemoteTier([RemoteSpec(url, timeout=TIMEOUT)], warn=warnings.append, environ={})
        assert list(remote.entries("k" * 64)) == []
        start = time.monotonic()
        remote.upload("k" * 64, MANIFEST, b"blob")
        remote.flush()
        elapsed = time.monotonic() - start
    assert elapsed < TIMEOUT + SLACK, elapsed
    assert warnings == [
        f"remote cache {url}: PUT cas/{'0' * 64} took longer than 1 s; building without it "
        "for the rest of this build"
    ]
    assert remote.summaries()[0].uploaded == 0
