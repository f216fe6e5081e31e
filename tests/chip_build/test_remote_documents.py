"""A document from a remote is parsed within a bound on its size and depth: one nested a
hundred thousand levels deep is a damaged entry (a miss, one warning), never a failed build."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.loopback import LOOPBACK, scripted_server
from _support.trees import make_tree

from pypto_build.chip_build import bounded_json
from pypto_build.chip_build.compile import compile_tree
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.remote import RemoteSpec, RemoteTier
from pypto_build.chip_build.toolchains import SimToolchain

DEEP = b"[" * 100_000 + b"]" * 100_000


def test_a_remote_document_nested_100000_deep_is_a_damaged_entry(
    sim: SimToolchain, tmp_path: Path
) -> None:
    warnings: list[str] = []

    def answer(method: str, path: str) -> tuple[int, bytes]:
        if method == "GET" and "/ac/" in path:
            return 200, b'{"format": "pypto-build-remote-v1", "entries": ' + DEEP + b"}"
        return (201, b"") if method == "PUT" else (404, b"")

    with scripted_server(answer) as port:
        url = f"http://{LOOPBACK}:{port}/cache"
        remote = RemoteTier([RemoteSpec(url, timeout=5.0)], warn=warnings.append, environ={})
        cache = CompileCache(tmp_path / "cache", remote=remote)
        report = compile_tree(
            make_tree(tmp_path / "out"), "a3", sim, jobs=2, cache=cache, progress=None
        )
        cache.flush()
    assert report.compiled == 4
    assert len(warnings) == 1, warnings
    assert "is damaged (nested deeper than 16 levels)" in warnings[0]


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'["[[[[", "\\"]]"]', 1),
        (DEEP, 100_000),
    ],
)
def test_depth_counts_the_brackets_outside_strings(text: bytes, depth: int) -> None:
    assert bounded_json.depth(text) == depth


def test_a_document_over_its_bounds_is_refused() -> None:
    with pytest.raises(bounded_json.DocumentRefused, match="nested deeper than 4 levels"):
        bounded_json.loads(DEEP, max_bytes=1 << 20, max_depth=4)
    with pytest.raises(bounded_json.DocumentRefused, match="3 bytes, at most 2 expected"):
        bounded_json.loads(b"[1]", max_bytes=2, max_depth=4)
    with pytest.raises(bounded_json.DocumentRefused, match="not a JSON document"):
        bounded_json.loads(b"[1", max_bytes=8, max_depth=4)
