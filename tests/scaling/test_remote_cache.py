"""The remote tier of the compile cache against a real nginx WebDAV server on loopback: a second
machine served by the first one's uploads, and remotes that refuse connections, hang, return
damaged entries, answer 500 or refuse uploads, none of which may fail or stall a build."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _support.loopback import LOOPBACK, Nginx, free_port, hanging_port
from _support.trees import make_tree

from pypto_build.chip_build.compile import CompileReport, compile_tree
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.remote import FORMAT, RemoteSpec, RemoteTier
from pypto_build.chip_build.toolchains import SimToolchain

#: The remotes' timeout in these tests: long enough for a loaded machine to answer, short enough
#: that paying it once per compile (the bug these tests guard against) shows.
TIMEOUT = 2.0
#: What a build may take beyond the same build without a remote: the timeout once, and slack
#: for a busy machine (plus the reference build's own time again, below). Paying the timeout
#: per compile and per upload, the bug this bounds, costs four timeouts more.
ALLOWED_EXTRA = TIMEOUT + 2.0
COMPILES = 4  # the tree of make_tree: three kernels and an orchestration


class Warnings(list[str]):
    """The warnings a remote tier printed."""

    def __call__(self, message: str) -> None:
        self.append(message)


def tier(*specs: RemoteSpec) -> tuple[RemoteTier, Warnings]:
    warnings = Warnings()
    return RemoteTier(specs, warn=warnings, environ={}), warnings


def build(out: Path, sim: SimToolchain, cache: CompileCache | None) -> CompileReport:
    """Compile the small test tree at ``out`` with two jobs, then wait for the uploads."""
    report = compile_tree(make_tree(out), "a3", sim, jobs=2, cache=cache, progress=None)
    if cache is not None:
        cache.flush()
    return report


def binaries(report: CompileReport) -> dict[str, bytes]:
    tree = report.log.parent.parent / report.chip
    return {r.artifact.as_posix(): (tree / r.artifact).read_bytes() for r in report.results}


def store_files(server: Nginx, instance: str) -> dict[str, list[Path]]:
    folder = server.root / instance
    return {space: sorted((folder / space).glob("*")) for space in ("ac", "cas")}


def test_a_second_machine_is_served_by_the_first_ones_uploads(
    sim: SimToolchain, nginx_server: Nginx, instance: str, tmp_path: Path
) -> None:
    url = nginx_server.url(nginx_server.webdav, instance)
    remote, warnings = tier(RemoteSpec(url, timeout=TIMEOUT))
    first = build(tmp_path / "one", sim, CompileCache(tmp_path / "local-one", remote=remote))
    assert (first.compiled, first.remote_hits) == (COMPILES, 0)
    stored = store_files(nginx_server, instance)
    assert [len(stored["ac"]), len(stored["cas"])] == [COMPILES, COMPILES]
    document = json.loads(stored["ac"][0].read_text(encoding="utf-8"))
    assert document["format"] == FORMAT
    assert document["key"] == stored["ac"][0].name
    [entry] = document["entries"]
    assert (nginx_server.root / instance / "cas" / entry["artifact_sha256"]).is_file()
    assert [summary.uploaded for summary in remote.summaries()] == [COMPILES]

    # Another machine: its own local cache, the tree somewhere else, the same remote.
    remote, warnings_two = tier(RemoteSpec(url, timeout=TIMEOUT))
    local = CompileCache(tmp_path / "local-two", remote=remote)
    second = build(tmp_path / "two", sim, local)
    assert (second.compiled, second.cache_hits, second.remote_hits) == (0, COMPILES, COMPILES)
    assert binaries(second) == binaries(first)
    assert warnings == warnings_two == []
    log = second.log.read_text(encoding="utf-8")
    assert log.count(": cache hit (remote) -> ") == COMPILES
    # A remote hit is stored locally: without the remote, the same machine hits locally.
    third = build(tmp_path / "three", sim, CompileCache(local.root))
    assert (third.cache_hits, third.remote_hits) == (COMPILES, 0)


def test_the_fallback_is_read_and_never_written(
    sim: SimToolchain, nginx_server: Nginx, instance: str, tmp_path: Path
) -> None:
    main = nginx_server.url(nginx_server.webdav, f"{instance}-main")
    branch = nginx_server.url(nginx_server.webdav, f"{instance}-branch")
    remote, _ = tier(RemoteSpec(main, timeout=TIMEOUT))
    reference = build(tmp_path / "main", sim, CompileCache(tmp_path / "main-cache", remote=remote))
    remote, warnings = tier(
        RemoteSpec(branch, timeout=TIMEOUT), RemoteSpec(main, read_only=True, timeout=TIMEOUT)
    )
    report = build(tmp_path / "branch", sim, CompileCache(tmp_path / "branch-cache", remote=remote))
    assert (report.compiled, report.remote_hits) == (0, COMPILES)
    assert binaries(report) == binaries(reference)
    assert warnings == []
    assert store_files(nginx_server, f"{instance}-branch") == {"ac": [], "cas": []}


def test_read_only_setting_never_uploads(
    sim: SimToolchain, nginx_server: Nginx, instance: str, tmp_path: Path
) -> None:
    url = nginx_server.url(nginx_server.webdav, instance)
    remote, warnings = tier(RemoteSpec(url, read_only=True, timeout=TIMEOUT))
    report = build(tmp_path / "out", sim, CompileCache(tmp_path / "cache", remote=remote))
    assert report.compiled == COMPILES
    assert warnings == []
    assert not (nginx_server.root / instance).exists()


SECRET = "the builders' secret"


def _swap_artifacts(server: Nginx, instance: str) -> None:
    """What a writer of the store can do: point every key's entry at another key's binary (a
    valid blob, of the right size and hash), keeping every other field."""
    documents = store_files(server, instance)["ac"]
    loaded = [json.loads(path.read_text(encoding="utf-8")) for path in documents]
    artifacts = [
        (doc["entries"][0]["artifact_sha256"], doc["entries"][0]["artifact_size"]) for doc in loaded
    ]
    for path, doc, (sha256, size) in zip(
        documents, loaded, artifacts[1:] + artifacts[:1], strict=True
    ):
        doc["entries"][0].update(artifact_sha256=sha256, artifact_size=size)
        path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_remote_that_must_present_signed_entries_takes_no_substituted_binary(
    sim: SimToolchain, nginx_server: Nginx, instance: str, tmp_path: Path
) -> None:
    url = nginx_server.url(nginx_server.webdav, instance)
    reference = build(tmp_path / "reference", sim, None)
    signing = {"PYPTO_REMOTE_CACHE_SIGNING_KEY": SECRET}
    writer = RemoteTier([RemoteSpec(url, timeout=TIMEOUT)], warn=Warnings(), environ=signing)
    build(tmp_path / "writer", sim, CompileCache(tmp_path / "writer-cache", remote=writer))
    entries = [
        json.loads(p.read_text())["entries"][0] for p in store_files(nginx_server, instance)["ac"]
    ]
    assert all(len(entry["signature"]) == 64 for entry in entries)
    # A reader that requires signatures is served by the signed entries.
    spec = RemoteSpec(url, read_only=True, timeout=TIMEOUT, signed=True)
    reader = RemoteTier([spec], warn=Warnings(), environ=signing)
    served = build(tmp_path / "served", sim, CompileCache(tmp_path / "served-cache", remote=reader))
    assert (served.remote_hits, binaries(served)) == (COMPILES, binaries(reference))

    _swap_artifacts(nginx_server, instance)
    # Without the setting, the substituted binaries are taken: what a store's writer can do.
    fooled = build(
        tmp_path / "fooled",
        sim,
        CompileCache(
            tmp_path / "fooled-cache",
            remote=tier(RemoteSpec(url, read_only=True, timeout=TIMEOUT))[0],
        ),
    )
    assert fooled.remote_hits == COMPILES and binaries(fooled) != binaries(reference)
    # With it, every substituted entry is a damaged one: compiled, and the tree is a cold build's.
    warnings = Warnings()
    reader = RemoteTier([spec], warn=warnings, environ=signing)
    report = build(tmp_path / "out", sim, CompileCache(tmp_path / "cache", remote=reader))
    assert (report.compiled, report.remote_hits) == (COMPILES, 0)
    assert binaries(report) == binaries(reference)
    assert len(warnings) == 1 and "an entry without a valid signature" in warnings[0]
    assert reader.summaries()[0].damaged == COMPILES
    # A reader without the secret is told so once, and builds without the remote.
    warnings = Warnings()
    blind = RemoteTier([spec], warn=warnings, environ={})
    build(tmp_path / "blind", sim, CompileCache(tmp_path / "blind-cache", remote=blind))
    assert warnings == [
        f"remote cache {url}: requires signed entries but PYPTO_REMOTE_CACHE_SIGNING_KEY is not "
        "set; building without it"
    ]


def _corrupt_blobs(server: Nginx, instance: str) -> None:
    for blob in store_files(server, instance)["cas"]:
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0xFF
        blob.write_bytes(bytes(data))


def _garbage_documents(server: Nginx, instance: str) -> None:
    for document in store_files(server, instance)["ac"]:
        document.write_text("<html>not a cache entry</html>", encoding="utf-8")


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        ("refuses connections", "Connection refused"),
        ("hangs", "took longer than 2 s"),
        ("returns corrupted blobs", "does not hash to its name"),
        ("returns garbage documents", "is damaged (not a JSON document)"),
        ("answers 500", "answered HTTP 500"),
        ("refuses uploads", "refuses uploads (PUT cas/"),
    ],
)
def test_a_faulty_remote_costs_one_timeout_and_one_warning(
    fault: str,
    expected: str,
    sim: SimToolchain,
    nginx_server: Nginx,
    instance: str,
    tmp_path: Path,
) -> None:
    start = time.monotonic()
    reference = build(tmp_path / "reference", sim, None)
    reference_time = time.monotonic() - start
    with hanging_port() as hanging:
        url = {
            "refuses connections": f"http://{LOOPBACK}:{free_port()}/cache",
            "hangs": f"http://{LOOPBACK}:{hanging}/cache",
            "answers 500": nginx_server.url(nginx_server.errors, instance),
            "refuses uploads": nginx_server.url(nginx_server.read_only, instance),
        }.get(fault, nginx_server.url(nginx_server.webdav, instance))
        if fault in ("returns corrupted blobs", "returns garbage documents"):
            remote, _ = tier(RemoteSpec(url, timeout=TIMEOUT))
            build(tmp_path / "populate", sim, CompileCache(tmp_path / "populate", remote=remote))
            damage = _corrupt_blobs if fault == "returns corrupted blobs" else _garbage_documents
            damage(nginx_server, instance)
        remote, warnings = tier(RemoteSpec(url, timeout=TIMEOUT))
        start = time.monotonic()
        report = build(tmp_path / "out", sim, CompileCache(tmp_path / "cache", remote=remote))
        elapsed = time.monotonic() - start
    assert report.compiled == COMPILES
    assert binaries(report) == binaries(reference)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"remote cache {url}: ")
    assert expected in warnings[0]
    assert elapsed < 2 * reference_time + ALLOWED_EXTRA, (elapsed, reference_time)
    if fault in ("returns corrupted blobs", "returns garbage documents"):
        # The compiles' uploads replaced the damaged entries: a third machine is served.
        remote, warnings = tier(RemoteSpec(url, timeout=TIMEOUT))
        repaired = build(tmp_path / "again", sim, CompileCache(tmp_path / "again", remote=remote))
        assert (repaired.remote_hits, warnings) == (COMPILES, [])
