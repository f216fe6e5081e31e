"""The compile cache on its own: keys, dependency files, hits and misses, corrupt entries,
dependency checks, concurrency, statistics and pruning."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import filelock
import pytest
from _support.compile_cache import KEY, Builder, deps, entries, make_tree

from pypto_build.chip_build.compile_cache import dependencies, entry_publisher, layout
from pypto_build.chip_build.compile_cache import keys as cache_keys
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.dependencies import FileDigests
from pypto_build.chip_build.compile_cache.depfile_parser import read_depfile
from pypto_build.chip_build.compile_cache.keys import (
    PACKAGE,
    PACKAGE_PLACEHOLDER,
    PackageFolder,
    compile_key,
)
from pypto_build.chip_build.compile_cache.layout import LAYOUT
from pypto_build.chip_build.compile_cache.stats import BuildCounts
from pypto_build.store.location import default_cache_dir
from pypto_build.store.size_limit import parse_size


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "tree")


@pytest.fixture
def cache(tmp_path: Path) -> CompileCache:
    return CompileCache(tmp_path / "cache")


def test_key_covers_source_commands_identity_and_version() -> None:
    base: dict[str, Any] = {
        "source": b"a",
        "commands": [["cc", "-O2"]],
        "identity": "cc 1",
        "version": "1",
    }
    key = compile_key(**base)
    assert key == compile_key(**base)
    changes = [
        {"source": b"b"},
        {"commands": [["cc", "-O3"]]},
        {"commands": [["cc", "-O2"], ["ld"]]},
        {"identity": "cc 2"},
        {"version": "2"},
    ]
    others = {compile_key(**{**base, **change}) for change in changes}
    assert len(others) == len(changes) and key not in others


def test_depfile_names_each_prerequisite_once_in_first_order(tmp_path: Path) -> None:
    headers = [f"/usr/include/h{index}.h" for index in range(3000)]
    depfile = tmp_path / "big.d"
    depfile.write_text(
        "k.so: k.cpp " + " \\\n ".join([*headers, *reversed(headers)]) + " a\\#b.h\n",
        encoding="utf-8",
    )
    assert read_depfile(depfile, tmp_path) == (
        tmp_path / "k.cpp",
        *map(Path, headers),
        tmp_path / "a#b.h",
    )


def test_depfile_parsing(tmp_path: Path) -> None:
    depfile = tmp_path / "k.d"
    depfile.write_text(
        "k.so: k.cpp /usr/include/stdio.h \\\n"
        " ../inc/a\\ b.h $$dollar.h \\\n"
        " /usr/include/stdio.h\n",
        encoding="utf-8",
    )
    cwd = tmp_path / "src"
    assert read_depfile(depfile, cwd) == (
        cwd / "k.cpp",
        Path("/usr/include/stdio.h"),
        tmp_path / "inc" / "a b.h",
        cwd / "$dollar.h",
    )


def test_miss_then_hit(cache: CompileCache, tree: Path) -> None:
    builder = Builder(b"binary", deps(tree))
    first = cache.fetch_or_build(KEY, tree, builder)
    second = cache.fetch_or_build(KEY, tree, builder)
    assert (first.data, first.hit) == (b"binary", False)
    assert (second.data, second.hit) == (b"binary", True)
    assert builder.calls == 1
    [entry] = entries(cache)
    manifest = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["key"] == KEY
    assert manifest["dependencies"][0] == {
        "in_tree": True,
        "path": "kernels/k.cpp",
        "sha256": manifest["dependencies"][0]["sha256"],
    }
    # Nothing but the entry is left behind: staging directories are removed.
    assert list((cache.root / LAYOUT / "tmp").iterdir()) == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda entry: (entry / "artifact").write_bytes(b"truncat"),
        lambda entry: (entry / "artifact").unlink(),
        lambda entry: (entry / "manifest.json").write_text("{", encoding="utf-8"),
        lambda entry: (entry / "manifest.json").unlink(),
    ],
    ids=["artifact-changed", "artifact-missing", "manifest-corrupt", "manifest-missing"],
)
def test_corrupt_entry_is_a_miss_and_is_replaced(
    damage: Callable[[Path], object], cache: CompileCache, tree: Path
) -> None:
    builder = Builder(b"binary", deps(tree))
    cache.fetch_or_build(KEY, tree, builder)
    [entry] = entries(cache)
    damage(entry)
    fetched = cache.fetch_or_build(KEY, tree, builder)
    assert (fetched.data, fetched.hit, builder.calls) == (b"binary", False, 2)
    [entry] = entries(cache)
    assert (entry / "artifact").read_bytes() == b"binary"
    assert cache.fetch_or_build(KEY, tree, builder).hit


def test_changed_dependency_is_a_miss_and_each_variant_is_kept(
    cache: CompileCache, tree: Path
) -> None:
    header = tree / "kernels" / "k.h"
    cache.fetch_or_build(KEY, tree, Builder(b"v1", deps(tree)))
    header.write_text("// v2, longer\n", encoding="utf-8")
    fetched = cache.fetch_or_build(KEY, tree, Builder(b"v2", deps(tree)))
    assert (fetched.data, fetched.hit) == (b"v2", False)
    assert len(entries(cache)) == 2
    header.write_text("// v1\n", encoding="utf-8")
    fresh = CompileCache(cache.root)  # no file hashes remembered from before
    assert fresh.fetch_or_build(KEY, tree, Builder(b"unused", [])).data == b"v1"


def test_one_build_looks_at_each_recorded_file_once(
    cache: CompileCache, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = [compile_key(source=bytes([n]), commands=[], identity="", version="") for n in range(4)]
    for key in keys:
        cache.fetch_or_build(key, tree, Builder(b"binary", deps(tree)))
    looked: list[str] = []
    look = dependencies.FileHashes.sha256

    def counted(self: dependencies.FileHashes, path: str) -> str | None:
        looked.append(path)
        return look(self, path)

    monkeypatch.setattr(dependencies.FileHashes, "sha256", counted)
    files = FileDigests()
    assert all(cache.fetch_or_build(key, tree, Builder(b"", []), files).hit for key in keys)
    assert sorted(looked) == sorted(str(path) for path in deps(tree))


def test_a_change_is_seen_by_the_next_build_not_by_the_one_that_checked_the_file(
    cache: CompileCache, tree: Path
) -> None:
    cache.fetch_or_build(KEY, tree, Builder(b"v1", deps(tree)))
    files = FileDigests()
    assert cache.fetch_or_build(KEY, tree, Builder(b"", []), files).hit
    (tree / "kernels" / "k.h").write_text("// v2, longer\n", encoding="utf-8")
    assert cache.fetch_or_build(KEY, tree, Builder(b"", []), files).hit
    fetched = cache.fetch_or_build(KEY, tree, Builder(b"v2", deps(tree)), FileDigests())
    assert (fetched.data, fetched.hit) == (b"v2", False)


def test_a_hit_links_the_verified_artifact_to_the_output(
    cache: CompileCache, tree: Path, tmp_path: Path
) -> None:
    output = tmp_path / "out" / "k.so"
    output.parent.mkdir()
    output.write_bytes(b"stale")
    missed = cache.fetch_or_build(KEY, tree, Builder(b"binary", deps(tree)), output=output)
    assert (missed.hit, missed.placed, output.read_bytes()) == (False, False, b"stale")
    fetched = cache.fetch_or_build(KEY, tree, Builder(b"", []), output=output)
    assert (fetched.hit, fetched.placed, output.read_bytes()) == (True, True, b"binary")
    [entry] = entries(cache)
    assert os.path.samefile(output, entry / "artifact")
    assert stat.S_IMODE(output.stat().st_mode) == 0o644
    assert [path.name for path in output.parent.iterdir()] == ["k.so"]


def test_an_artifact_without_the_mode_of_an_output_is_not_linked(
    cache: CompileCache, tree: Path, tmp_path: Path
) -> None:
    cache.fetch_or_build(KEY, tree, Builder(b"binary", deps(tree)))
    [entry] = entries(cache)
    (entry / "artifact").chmod(0o600)
    output = tmp_path / "k.so"
    fetched = cache.fetch_or_build(KEY, tree, Builder(b"", []), output=output)
    assert (fetched.hit, fetched.placed, fetched.data) == (True, False, b"binary")
    assert not output.exists()


def test_entry_names_are_the_canonical_json_of_key_and_dependencies() -> None:
    """Entries published before the name was spelled out by hand keep their names."""
    recorded = [
        dependencies.Dependency('k\u00e9 "a\\b".h', True, "0" * 64),
        dependencies.Dependency(f"{PACKAGE_PLACEHOLDER}/x y.h", False, "f" * 64),
    ]
    shared = "e" * 64
    document = [KEY, [dep.as_json() for dep in recorded], shared]
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert layout.entry_name(KEY, recorded, shared) == expected
    # The shared dependencies' text is that canonical JSON too: its hash is the one named.
    listed = [dep.as_json() for dep in recorded]
    assert dependencies.listing(recorded) == json.dumps(
        listed, sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )


def test_deleted_dependency_is_a_miss(cache: CompileCache, tree: Path) -> None:
    cache.fetch_or_build(KEY, tree, Builder(b"v1", deps(tree)))
    (tree / "kernels" / "k.h").unlink()
    assert not cache.fetch_or_build(KEY, tree, Builder(b"v2", [])).hit


def test_in_tree_dependencies_follow_the_tree(
    cache: CompileCache, tree: Path, tmp_path: Path
) -> None:
    cache.fetch_or_build(KEY, tree, Builder(b"binary", deps(tree)))
    moved = tmp_path / "elsewhere"
    tree.rename(moved)
    assert cache.fetch_or_build(KEY, moved, Builder(b"unused", [])).hit
    (moved / "kernels" / "k.h").write_text("// another header\n", encoding="utf-8")
    assert not cache.fetch_or_build(KEY, moved, Builder(b"other", deps(moved))).hit


def test_keys_and_entries_do_not_name_where_pypto_build_is_installed(
    cache: CompileCache, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An isolated build installs pypto-build into a new temporary folder each time: its
    headers, named on the command line and read by the compiler, must not change the key, and
    an entry recorded under one installation must hit under another with the same headers."""
    installs = [tmp_path / "env1" / "pypto_build", tmp_path / "env2" / "pypto_build"]
    for root in installs:
        (root / "include").mkdir(parents=True)
        (root / "include" / "api.h").write_text("// the API\n", encoding="utf-8")

    def key(root: Path) -> str:
        argv = ["g++", f"-I{root}/include", "-c", "k.cpp"]
        return compile_key(source=b"int x;", commands=[argv], identity="g++", version="12")

    keys = []
    for index, root in enumerate(installs):
        for module in (cache_keys, dependencies, entry_publisher):
            monkeypatch.setattr(module, "PACKAGE", PackageFolder(root))
        keys.append(key(root))
        header = [*deps(tree), root / "include" / "api.h"]
        fetched = cache.fetch_or_build(keys[-1], tree, Builder(b"binary", header))
        assert fetched.hit == (index == 1)
    assert keys[0] == keys[1]
    # Only the package folder itself is replaced, not a folder whose name merely starts so.
    folder = PackageFolder(installs[0])
    assert folder.portable(f"-I{installs[0]}/include") == f"-I{PACKAGE_PLACEHOLDER}/include"
    assert folder.portable(f"-I{installs[0]}x/include") == f"-I{installs[0]}x/include"
    (manifest,) = (cache.root / LAYOUT / "entries").glob("*/*/*/manifest.json")
    recorded = json.loads((manifest.parent / "shared.json").read_text(encoding="utf-8"))
    assert {"in_tree": False, "path": f"{PACKAGE_PLACEHOLDER}/include/api.h"} in [
        {k: v for k, v in dep.items() if k != "sha256"} for dep in recorded
    ]
    # Another installation with other headers misses.
    (installs[1] / "include" / "api.h").write_text("// changed\n", encoding="utf-8")
    assert not cache.fetch_or_build(keys[1], tree, Builder(b"new", deps(tree))).hit
    assert PACKAGE.local(PACKAGE.portable(str(PACKAGE.root / "x.h"))) == str(PACKAGE.root / "x.h")


def test_concurrent_builders_of_one_key_compile_once(cache: CompileCache, tree: Path) -> None:
    builder = Builder(b"binary", deps(tree), delay=0.3)
    results = []
    start = threading.Barrier(2)

    def fetch() -> None:
        start.wait()
        results.append(cache.fetch_or_build(KEY, tree, builder))

    threads = [threading.Thread(target=fetch) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builder.calls == 1
    assert sorted(result.hit for result in results) == [False, True]
    assert {result.data for result in results} == {b"binary"}


def test_lock_timeout_builds_without_the_cache(tmp_path: Path, tree: Path) -> None:
    cache = CompileCache(tmp_path / "cache", lock_timeout=0.05)
    lock_path = cache.root / LAYOUT / "locks" / KEY[:2] / f"{KEY}.lock"
    lock_path.parent.mkdir(parents=True)
    with filelock.FileLock(lock_path):
        fetched = cache.fetch_or_build(KEY, tree, Builder(b"binary", deps(tree)))
    assert (fetched.data, fetched.hit) == (b"binary", False)
    assert entries(cache) == []


def _files(root: Path) -> list[str]:
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())


def test_a_file_artifact_is_a_private_copy_of_a_regular_entry(
    cache: CompileCache, tree: Path
) -> None:
    builder = Builder(b"library", deps(tree))
    with cache.fetch_or_build_file(KEY, tree, builder, "lib.so") as path:
        assert (path.name, path.read_bytes()) == ("lib.so", b"library")
        assert path.is_relative_to(cache.root)
    assert not path.exists()
    with cache.fetch_or_build_file(KEY, tree, builder, "lib.so") as again:
        assert again.read_bytes() == b"library"
    assert builder.calls == 1
    # Counted and pruned like any entry; nothing else is left behind.
    assert cache.stats().entries == 1
    assert cache.prune(max_size=0).removed_entries == 1
    assert [name for name in _files(cache.root) if not name.startswith(f"{LAYOUT}/locks/")] == []


def test_stats_and_last_build(cache: CompileCache, tree: Path) -> None:
    assert (cache.stats().entries, cache.stats().size, cache.stats().last_build) == (0, 0, None)
    cache.fetch_or_build(KEY, tree, Builder(b"12345", deps(tree)))
    other = compile_key(source=b"y", commands=[], identity="", version="")
    cache.fetch_or_build(other, tree, Builder(b"123", []))
    cache.record_build(BuildCounts(hits=3, misses=1))
    stats = cache.stats()
    listed = [entry / name for entry in entries(cache) for name in ("manifest.json", "shared.json")]
    assert (stats.entries, stats.size) == (2, 8 + sum(path.stat().st_size for path in listed))
    assert stats.last_build == BuildCounts(hits=3, misses=1)


def test_prune_evicts_least_recently_used(cache: CompileCache, tree: Path) -> None:
    keys = [compile_key(source=bytes([n]), commands=[], identity="", version="") for n in range(3)]
    for age, key in zip((300, 100, 200), keys, strict=True):
        cache.fetch_or_build(key, tree, Builder(b"x" * 1000, []))
        [entry] = list((cache.root / LAYOUT / "entries" / key[:2] / key).iterdir())
        stamp = time.time() - age
        os.utime(entry / "manifest.json", (stamp, stamp))
    # A hit refreshes the last use: the oldest entry becomes the newest.
    assert cache.fetch_or_build(keys[0], tree, Builder(b"unused", [])).hit
    size = cache.stats().size
    result = cache.prune(max_size=size - 1)
    assert (result.removed_entries, result.remaining_entries) == (1, 2)
    assert result.remaining_bytes == size - result.removed_bytes
    assert not (cache.root / LAYOUT / "entries" / keys[2][:2] / keys[2]).exists()
    assert cache.fetch_or_build(keys[0], tree, Builder(b"unused", [])).hit
    assert cache.fetch_or_build(keys[1], tree, Builder(b"unused", [])).hit
    emptied = cache.prune(max_size=0)
    assert (emptied.removed_entries, emptied.remaining_entries, cache.stats().entries) == (2, 0, 0)


def test_emptying_the_cache_removes_the_folders_of_older_layouts(cache: CompileCache) -> None:
    older = cache.root / "v1" / "entries" / "ab" / "key" / "entry"
    older.mkdir(parents=True)
    (older / "artifact").write_bytes(b"from an older pypto-build")
    unrelated = cache.root / "projects"
    unrelated.mkdir()
    cache.prune(max_size=10**12)
    assert older.exists()  # a size limit evicts entries of this layout only
    cache.prune(max_size=0)
    assert not (cache.root / "v1").exists()
    assert unrelated.exists() and (cache.root / LAYOUT).exists()


def test_prune_removes_the_staging_of_killed_builds_only(cache: CompileCache) -> None:
    tmp = cache.root / LAYOUT / "tmp"
    killed, running = tmp / "killed-build", tmp / "running-build"
    for path in (killed, running):
        path.mkdir(parents=True)
    # A running build holds its staging folder's lock; a killed one's lock died with it.
    fd = os.open(running, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        cache.prune(max_size=10**12)
    finally:
        os.close(fd)
    assert (killed.exists(), running.exists()) == (False, True)


def test_default_location(tmp_path: Path) -> None:
    assert default_cache_dir({"PYPTO_CACHE_DIR": "/c", "XDG_CACHE_HOME": "/x"}) == Path("/c")
    assert default_cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/pypto-build")
    assert default_cache_dir({}) == Path.home() / ".cache" / "pypto-build"


@pytest.mark.parametrize(
    ("text", "size"),
    [("4096", 4096), ("500M", 500_000_000), ("2G", 2_000_000_000), ("1.5GiB", 1_610_612_736),
     ("64k", 64_000), ("3Ki", 3072), ("0", 0)],
)  # fmt: skip
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "M", "-1G", "2X", "1i"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid size"):
        parse_size(text)


def test_a_local_hit_hands_back_the_hash_it_verified(cache: CompileCache, tree: Path) -> None:
    """The caller records the binary's hash: a hit gives the one it checked the bytes against,
    so the bytes are not hashed twice; a compile gives none."""
    builder = Builder(b"binary", deps(tree))
    assert cache.fetch_or_build(KEY, tree, builder).sha256 is None
    hit = cache.fetch_or_build(KEY, tree, builder)
    assert hit.hit and hit.sha256 == hashlib.sha256(b"binary").hexdigest()
