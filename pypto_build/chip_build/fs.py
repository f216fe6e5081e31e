"""Atomic file writes and deterministic tree walks for build output.

A reader (a concurrent build, the wheel packer, the cache) must never see a half-written file,
and two builds of the same inputs must list their trees identically. So every file is written
to a temporary sibling and renamed into place, with fixed permissions, and every walk returns
relative paths in one total order (their POSIX spelling), independent of the file system.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

#: Mode of every written file. Fixed, so that trees and wheels do not depend on the umask, and
#: readable by all, unlike the 0600 that temporary files are created with.
FILE_MODE = 0o644


def atomic_write_bytes(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the new one.

    Missing parent directories are created. With ``fsync`` the data and the rename are flushed
    to disk before returning (for caches that must survive a crash, not for ordinary output).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            if fsync:
                os.fsync(stream.fileno())
        tmp.chmod(FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if fsync:
        _fsync_directory(path.parent)


def atomic_write_text(path: Path, text: str, *, fsync: bool = False) -> None:
    """Write ``text`` as UTF-8, byte for byte: no platform newline translation."""
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def _fsync_directory(directory: Path) -> None:
    """Persist a rename by flushing its directory (POSIX only; Windows has no directory fds)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LinkInTree(ValueError):
    """A tree holds a symbolic link (:func:`walk_files`); ``relative`` is its path in the tree."""

    def __init__(self, relative: str) -> None:
        super().__init__(f"symbolic link in build tree: {relative}")
        self.relative = relative


def walk_files(root: Path) -> list[Path]:
    """Every regular file under ``root``, as relative paths sorted by their POSIX spelling.

    A symbolic link anywhere in the tree is an error (:class:`LinkInTree`): a wheel cannot
    carry one, and following it would make the output depend on files outside the tree.
    """
    if not root.is_dir():
        raise NotADirectoryError(f"not a directory: {root}")
    found: list[Path] = []
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory)
        for name in (*dirnames, *filenames):
            entry = base / name
            if entry.is_symlink():
                raise LinkInTree(entry.relative_to(root).as_posix())
        found.extend((base / name).relative_to(root) for name in filenames)
    return sorted(found, key=Path.as_posix)


def sha256_file(path: Path) -> str:
    """The SHA-256 of the file's bytes, as lowercase hex."""
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def remove_entry(path: Path) -> None:
    """Remove ``path`` itself, whatever it is, following no link: a folder with its contents, a
    file, or a link (never what it points to); nothing if it is gone. Debris of a killed build
    is whatever that build left, so it is removed without trusting its kind."""
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
