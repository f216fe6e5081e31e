"""Atomic writes and deterministic walks of build trees."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from pypto_build import files as fs


def test_atomic_write_creates_parents_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.bin"
    fs.atomic_write_bytes(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.bin"]


def test_atomic_write_replaces_and_fsyncs(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    fs.atomic_write_text(target, "old\n")
    fs.atomic_write_text(target, "new\n", fsync=True)
    assert target.read_text(encoding="utf-8") == "new\n"


def test_text_is_utf8_without_newline_translation(tmp_path: Path) -> None:
    target = tmp_path / "t.py"
    fs.atomic_write_text(target, "a\nµ\r\n")
    assert target.read_bytes() == "a\nµ\r\n".encode()


def test_mode_is_fixed_regardless_of_umask(tmp_path: Path) -> None:
    previous = os.umask(0o077)
    try:
        fs.atomic_write_bytes(tmp_path / "f", b"x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == fs.FILE_MODE


def test_failed_write_keeps_old_content_and_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    fs.atomic_write_text(target, "old")
    with pytest.raises(TypeError):
        fs.atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_walk_files_sorted_by_posix_spelling(tmp_path: Path) -> None:
    for rel in ["b.txt", "a/b", "a-b/x", "a/c/d", "A"]:
        fs.atomic_write_text(tmp_path / rel, rel)
    (tmp_path / "empty_dir").mkdir()
    walked = fs.walk_files(tmp_path)
    # "a-b/x" < "a/b" because '-' sorts before '/': one total order on the spelled paths.
    assert [p.as_posix() for p in walked] == ["A", "a-b/x", "a/b", "a/c/d", "b.txt"]
    assert all(not p.is_absolute() for p in walked)


def test_walk_files_refuses_symlinks(tmp_path: Path) -> None:
    fs.atomic_write_text(tmp_path / "real", "x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "link").symlink_to(tmp_path / "real")
    with pytest.raises(ValueError, match="symbolic link in build tree: sub/link"):
        fs.walk_files(tmp_path)


def test_walk_files_requires_a_directory(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        fs.walk_files(tmp_path / "missing")


def test_sha256_regular_of_a_written_file(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000
    fs.atomic_write_bytes(tmp_path / "f", data)
    assert fs.sha256_regular(tmp_path / "f") == hashlib.sha256(data).hexdigest()


def test_walk_files_refuses_a_fifo(tmp_path: Path) -> None:
    """A walk lists regular files only: a FIFO is named, never listed to be opened."""
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / "pipe")
    with pytest.raises(fs.IrregularEntry, match="FIFO, device or socket in build tree: sub/pipe"):
        fs.walk_files(tmp_path)
