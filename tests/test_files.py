"""The readers of files named by users, manifests and cache entries: regular files only, read
whole."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pypto_build import files
from pypto_build.files import NotRegularFile, read_regular, read_regular_status, sha256_regular


def test_the_bytes_come_with_the_status_of_the_file_read(tmp_path: Path) -> None:
    path = tmp_path / "k.so"
    path.write_bytes(b"\x7fELF" * 1000)
    data, status = read_regular_status(path, follow_symlinks=False)
    assert data == read_regular(path) == b"\x7fELF" * 1000
    assert (status.st_ino, status.st_size) == (path.stat().st_ino, 4000)


def test_a_file_larger_than_its_recorded_size_is_read_whole() -> None:
    """``/proc`` files are regular files that report a size of 0."""
    data, status = read_regular_status(Path("/proc/self/status"))
    assert status.st_size == 0 and b"Name:" in data


def test_a_short_read_is_read_on_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A network file system may return fewer bytes than asked for before the end."""
    path = tmp_path / "k.so"
    path.write_bytes(bytes(range(256)) * 40)
    read = os.read
    monkeypatch.setattr(files.os, "read", lambda fd, n: read(fd, min(n, 1000)))
    assert read_regular(path) == bytes(range(256)) * 40


def test_anything_but_a_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile):
        read_regular_status(fifo)  # refused, not waited on
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "missing-or-not")
    (tmp_path / "missing-or-not").write_bytes(b"x")
    with pytest.raises(OSError):
        read_regular_status(link, follow_symlinks=False)
    assert read_regular_status(link)[0] == b"x"


def test_the_hash_of_a_regular_file_is_of_all_its_bytes_and_nothing_else_is_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "_CHUNK", 7)  # several reads: the chunks add up
    data = bytes(range(256)) * 3
    (tmp_path / "file").write_bytes(data)
    assert sha256_regular(tmp_path / "file") == hashlib.sha256(data).hexdigest()
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(NotRegularFile):
        sha256_regular(tmp_path / "fifo")  # refused, not waited on
    (tmp_path / "link").symlink_to(tmp_path / "file")
    with pytest.raises(OSError):
        sha256_regular(tmp_path / "link", follow_symlinks=False)


def test_a_path_holding_a_nul_byte_is_a_problem_not_an_error(tmp_path: Path) -> None:
    assert files.file_problem(tmp_path / "k\0.cpp") == "the path holds a NUL byte"
