"""The compile cache trusts nothing it reads: planted links, damaged entries, manifests naming
devices, FIFOs or paths that climb out, a folder it cannot use. Each is detected, never
followed for writing, and costs one warning line, never the build."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _support.compile_cache import KEY, Builder, deps, entries, make_tree

from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.dependencies import FileDigests
from pypto_build.chip_build.compile_cache.keys import digest_json
from pypto_build.chip_build.compile_cache.layout import LAYOUT
from pypto_build.store.disk import link_verified


@dataclass
class Warned:
    """A cache with its warnings collected."""

    cache: CompileCache
    warnings: list[str] = field(default_factory=list)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "tree")


@pytest.fixture
def warned(tmp_path: Path) -> Warned:
    messages: list[str] = []
    return Warned(CompileCache(tmp_path / "cache", warn=messages.append), messages)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the cache that no planted link may change."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    return victim


def _published(warned: Warned, tree: Path) -> Path:
    """Build ``KEY`` once; its entry."""
    warned.cache.fetch_or_build(KEY, tree, Builder(b"binary", deps(tree)))
    [entry] = entries(warned.cache)
    return entry


def _rebuilds_with_one_warning(warned: Warned, tree: Path, what: str) -> None:
    builder = Builder(b"binary", deps(tree))
    fetched = warned.cache.fetch_or_build(KEY, tree, builder)
    assert (fetched.data, fetched.hit, builder.calls) == (b"binary", False, 1)
    assert len(warned.warnings) == 1, warned.warnings
    assert what in warned.warnings[0]
    # Rebuilt and published again: the next lookup hits, silently.
    assert warned.cache.fetch_or_build(KEY, tree, builder).hit
    assert len(warned.warnings) == 1


def _rewrite_manifest(entry: Path, change: Callable[[dict[str, object]], None]) -> None:
    manifest = entry / "manifest.json"
    document = json.loads(manifest.read_text(encoding="utf-8"))
    change(document)
    manifest.write_text(json.dumps(document), encoding="utf-8")


def _flip_first_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 0x01
    path.write_bytes(bytes(data))


def _flip_dependency_hash(entry: Path) -> None:
    def flip(document: dict[str, object]) -> None:
        dependency = document["dependencies"][0]  # type: ignore[index]
        digest = dependency["sha256"]
        dependency["sha256"] = ("0" if digest[0] != "0" else "1") + digest[1:]

    _rewrite_manifest(entry, flip)


def _symlink_to(path: Path, target: Path) -> None:
    target.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(target)


DAMAGE: dict[str, Callable[[Path, Path], object]] = {
    "artifact-flipped-byte": lambda entry, _: _flip_first_byte(entry / "artifact"),
    "artifact-truncated": lambda entry, _: (entry / "artifact").write_bytes(b"bin"),
    "artifact-emptied": lambda entry, _: (entry / "artifact").write_bytes(b""),
    "artifact-symlinked": lambda entry, elsewhere: _symlink_to(entry / "artifact", elsewhere),
    "artifact-missing": lambda entry, _: (entry / "artifact").unlink(),
    "manifest-flipped-byte": lambda entry, _: _flip_first_byte(entry / "manifest.json"),
    "manifest-truncated": lambda entry, _: (entry / "manifest.json").write_text("{"),
    "manifest-emptied": lambda entry, _: (entry / "manifest.json").write_text(""),
    "manifest-symlinked": lambda entry, elsewhere: _symlink_to(entry / "manifest.json", elsewhere),
    "manifest-missing": lambda entry, _: (entry / "manifest.json").unlink(),
    "dependency-hash-flipped": lambda entry, _: _flip_dependency_hash(entry),
    "artifact-hash-flipped": lambda entry, _: _rewrite_manifest(
        entry, lambda d: d.update(artifact_sha256=hashlib.sha256(b"other").hexdigest())
    ),
    "shared-flipped-byte": lambda entry, _: _flip_first_byte(entry / "shared.json"),
    "shared-emptied": lambda entry, _: (entry / "shared.json").write_bytes(b""),
    "shared-symlinked": lambda entry, elsewhere: _symlink_to(entry / "shared.json", elsewhere),
    "shared-missing": lambda entry, _: (entry / "shared.json").unlink(),
    "manifest-nested-too-deep": lambda entry, _: (entry / "manifest.json").write_text(
        "[" * 100_000
    ),
    "shared-not-a-list": lambda entry, _: (
        (entry / "shared.json").write_bytes(b"{}"),
        _rewrite_manifest(
            entry, lambda d: d.update(shared_sha256=hashlib.sha256(b"{}").hexdigest())
        ),
    ),
    "shared-hash-flipped": lambda entry, _: _rewrite_manifest(
        entry, lambda d: d.update(shared_sha256="0" * 64)
    ),
    "manifest-with-another-field": lambda entry, _: _rewrite_manifest(
        entry, lambda d: d.update(note="x")
    ),
    "manifest-of-the-old-layout": lambda entry, _: _rewrite_manifest(
        entry, lambda d: d.update(format="v1")
    ),
    "dependency-with-another-field": lambda entry, _: _rewrite_manifest(
        entry,
        lambda d: d["dependencies"][0].update(note="x"),  # type: ignore[index]
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_entry_is_evicted_and_rebuilt_with_one_warning(
    damage: str, warned: Warned, tree: Path, tmp_path: Path
) -> None:
    entry = _published(warned, tree)
    elsewhere = tmp_path / "elsewhere"
    DAMAGE[damage](entry, elsewhere)
    _rebuilds_with_one_warning(warned, tree, "evicted damaged entry")
    if elsewhere.exists():  # what a link pointed at is never touched or removed
        assert elsewhere.stat().st_size > 0


def _fifo(tmp_path: Path) -> str:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return str(fifo)


HOSTILE_DEPENDENCIES: dict[str, Callable[[Path], dict[str, object]]] = {
    "dev-zero": lambda _: {"in_tree": False, "path": "/dev/zero"},
    "fifo": lambda tmp_path: {"in_tree": False, "path": _fifo(tmp_path)},
    "folder": lambda tmp_path: {"in_tree": False, "path": str(tmp_path)},
    "climbs-out-of-the-tree": lambda _: {"in_tree": True, "path": "../victim.txt"},
    "absolute-in-tree": lambda _: {"in_tree": True, "path": "/etc/hostname"},
    "relative-outside": lambda _: {"in_tree": False, "path": "etc/hostname"},
    "dotdot-absolute": lambda tmp_path: {"in_tree": False, "path": f"{tmp_path}/../x"},
}


@pytest.mark.parametrize("listed_in", ["dependencies", "shared"])
@pytest.mark.parametrize("hostile", sorted(HOSTILE_DEPENDENCIES))
def test_a_manifest_naming_anything_but_a_file_in_place_is_a_miss_evicted_once(
    hostile: str, listed_in: str, warned: Warned, tree: Path, tmp_path: Path
) -> None:
    entry = _published(warned, tree)
    dependency = {**HOSTILE_DEPENDENCIES[hostile](tmp_path), "sha256": "0" * 64}

    def plant(document: dict[str, object]) -> None:
        if listed_in == "dependencies":
            document["dependencies"] = [dependency]
        else:  # with the file's true hash: only the path check is left to refuse it
            shared = json.dumps([dependency], sort_keys=True, separators=(",", ":")).encode()
            (entry / "shared.json").write_bytes(shared)
            document["shared_sha256"] = hashlib.sha256(shared).hexdigest()

    _rewrite_manifest(entry, plant)
    # The entry's name no longer matches either; rename it as a forger would, so that only
    # the path check stands between the cache and the hostile dependency.
    document = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
    named = [KEY, document["dependencies"], document["shared_sha256"]]
    entry.rename(entry.parent / digest_json(named))
    _rebuilds_with_one_warning(warned, tree, "evicted damaged entry")


def test_shared_dependencies_are_checked_once_per_build_and_compared_after(
    warned: Warned, tree: Path, tmp_path: Path
) -> None:
    """Two entries share the list of headers outside the tree: a build verifies it once, and
    a second entry whose text differs under the same claimed hash is damaged all the same."""
    header = tmp_path / "system" / "s.h"
    header.parent.mkdir()
    header.write_text("// a system header\n", encoding="utf-8")
    keys = [KEY, hashlib.sha256(b"another compile").hexdigest()]
    for key in keys:
        warned.cache.fetch_or_build(key, tree, Builder(key.encode(), [*deps(tree), header]))
    first, second = entries(warned.cache)
    texts = {(entry / "shared.json").read_text(encoding="utf-8") for entry in (first, second)}
    assert len(texts) == 1 and str(header) in texts.pop()
    files = FileDigests()
    assert all(warned.cache.fetch_or_build(key, tree, Builder(b"", []), files).hit for key in keys)
    shared = second / "shared.json"
    shared.write_text(shared.read_text(encoding="utf-8").replace(str(header), "/etc/passwd"))
    files = FileDigests()
    altered = keys[entries(warned.cache).index(second)]
    fetched = [warned.cache.fetch_or_build(key, tree, Builder(b"new", []), files) for key in keys]
    assert [item.hit for item in fetched] == [key != altered for key in keys]
    assert len(warned.warnings) == 1 and "do not have their recorded SHA-256" in warned.warnings[0]
    assert first.exists() != (keys[0] == altered)


@pytest.mark.parametrize(
    "planted", ["lock", "locks-folder", "tmp-folder", "entries-folder", "key-folder"]
)
def test_a_planted_link_is_never_followed_for_writing(
    planted: str, warned: Warned, tree: Path, tmp_path: Path, outside: Path
) -> None:
    base = warned.cache.root / LAYOUT
    target_dir = tmp_path / "outside-dir"
    target_dir.mkdir()
    link = {
        "lock": base / "locks" / KEY[:2] / f"{KEY}.lock",
        "locks-folder": base / "locks" / KEY[:2],
        "tmp-folder": base / "tmp",
        "entries-folder": base / "entries" / KEY[:2],
        "key-folder": base / "entries" / KEY[:2] / KEY,
    }[planted]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside if planted == "lock" else target_dir)
    fetched = warned.cache.fetch_or_build(KEY, tree, Builder(b"binary", deps(tree)))
    assert fetched.data == b"binary"
    assert outside.read_text(encoding="utf-8") == "precious\n"
    assert list(target_dir.iterdir()) == []
    assert len(warned.warnings) == 1 and "not" in warned.warnings[0]
    assert warned.cache.fetch_or_build(KEY, tree, Builder(b"binary", deps(tree))).hit


@pytest.mark.parametrize("kind", ["a-file", "under-a-file", "read-only-file-system"])
def test_an_unusable_cache_means_compiling_without_it_with_one_warning(
    kind: str, tmp_path: Path, tree: Path
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder\n", encoding="utf-8")
    root = {
        "a-file": blocker,
        "under-a-file": blocker / "cache",
        # /proc refuses new folders, to root as well: a read-only place for any user.
        "read-only-file-system": Path("/proc/pypto-build-cache"),
    }[kind]
    messages: list[str] = []
    cache = CompileCache(root, warn=messages.append)
    builder = Builder(b"binary", deps(tree))
    for _ in range(2):
        fetched = cache.fetch_or_build(KEY, tree, builder)
        assert (fetched.data, fetched.hit) == (b"binary", False)
    with cache.fetch_or_build_file(KEY, tree, builder, "lib.so") as path:
        assert path.read_bytes() == b"binary"
    assert builder.calls == 3
    assert len(messages) == 1 and "compiling without it" in messages[0]
    assert blocker.read_text(encoding="utf-8") == "not a folder\n"


class _RemoteEntry:
    def __init__(self, manifest: dict[str, object], data: bytes) -> None:
        self.manifest = manifest
        self.data = data
        self.reasons: list[str] = []

    def artifact(self, sha256: str) -> bytes | None:
        return self.data if hashlib.sha256(self.data).hexdigest() == sha256 else None

    def damaged(self, reason: str) -> None:
        self.reasons.append(reason)


class _Remote:
    """The remote tier's interface as the cache uses it, serving one entry."""

    def __init__(self, entry: _RemoteEntry) -> None:
        self.entry = entry

    def entries(self, key: str) -> list[_RemoteEntry]:
        return [self.entry]

    def upload(self, key: str, manifest: object, data: bytes) -> None:
        pass

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("hostile", ["dev-zero", "fifo", "climbs-out-of-the-tree"])
def test_a_remote_entry_goes_through_the_same_checks(
    hostile: str, tmp_path: Path, tree: Path
) -> None:
    dependency = {**HOSTILE_DEPENDENCIES[hostile](tmp_path), "sha256": "0" * 64}
    manifest = {
        "artifact_sha256": hashlib.sha256(b"forged").hexdigest(),
        "dependencies": [dependency],
        "format": "v1",
        "key": KEY,
    }
    remote = _RemoteEntry(manifest, b"forged")
    cache = CompileCache(tmp_path / "cache", remote=_Remote(remote))  # type: ignore[arg-type]
    fetched = cache.fetch_or_build(KEY, tree, Builder(b"binary", deps(tree)))
    assert (fetched.data, fetched.remote) == (b"binary", False)
    assert len(remote.reasons) == 1


def test_an_output_is_linked_only_to_the_file_whose_bytes_were_verified(tmp_path: Path) -> None:
    """Between reading an entry's artifact and linking it, the entry's path may come to name
    another file: the link is checked to be the file read, and undone otherwise."""
    verified, replaced = tmp_path / "verified", tmp_path / "replaced"
    for path in (verified, replaced):
        path.write_bytes(path.name.encode())
        path.chmod(0o644)
    output = tmp_path / "out" / "k.so"
    output.parent.mkdir()
    assert not link_verified(replaced, os.stat(verified), output)
    assert list(output.parent.iterdir()) == []
    assert link_verified(verified, os.stat(verified), output)
    assert output.read_bytes() == b"verified" and os.path.samefile(output, verified)
    assert [path.name for path in output.parent.iterdir()] == ["k.so"]
