"""Every read, hash, walk and atomic write of a file a user, a manifest, a cache entry or a
template names: regular files only, no link followed where a link could lead elsewhere, reads
bounded where the reader knows a size.

Every part of pypto-build reads paths it did not choose: program files and kernel sources from
the command line or ``[tool.pypto]``, ``pyproject.toml``, the headers a cache entry's manifest
lists. A path naming a FIFO blocks a plain ``open`` forever and one naming ``/dev/zero`` never
reaches the end of its data, so a build would hang instead of failing. These readers open
without blocking, look at what was opened (not at the path, which may change in between) and
refuse anything but a regular file with :class:`NotRegularFile`, an :class:`OSError` that
callers already report as "the path and the reason". The module sits at the top of the package,
beside its parts, because every part reads such files and none may import another upward.

Writes and walks of build output live here too: a reader (a concurrent build, the wheel packer,
the cache) must never see a half-written file, and two builds of the same inputs must list
their trees identically. So every file is written to a temporary sibling and renamed into
place, with fixed permissions, and every walk returns relative paths in one total order (their
POSIX spelling), listing regular files only: a link, a FIFO, a device or a socket in a tree is
an error (:class:`IrregularEntry`), never followed or opened. ``tests/test_files_only_here.py``
checks that no other module opens, hashes, walks or replaces such files itself.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pypto_build.errors import PyptoOSError, PyptoUsageError

#: Mode of every written file. Fixed, so that trees and wheels do not depend on the umask, and
#: readable by all, unlike the 0600 that temporary files are created with.
FILE_MODE = 0o644


class NotRegularFile(PyptoOSError):
    """The path names a FIFO, a device, a folder or a socket, not a regular file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


class TooLarge(PyptoOSError):
    """The file holds more bytes than its reader takes (``max_bytes``)."""

    def __init__(self, path: str | os.PathLike[str], limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))


def _open(path: str | os.PathLike[str], follow_symlinks: bool) -> int:
    """A descriptor of ``path`` opened for reading without blocking; a link refused (when not
    followed) says so, instead of the system's "Too many levels of symbolic links"."""
    try:
        return os.open(path, _flags(follow_symlinks))
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise OSError(
                errno.ELOOP, "a symbolic link, which is not followed", os.fspath(path)
            ) from None
        raise


@contextmanager
def open_regular(
    path: str | os.PathLike[str], *, follow_symlinks: bool = True
) -> Iterator[io.BufferedReader]:
    """``path`` opened for reading in binary mode, refused unless it is a regular file.

    Without ``follow_symlinks`` a symbolic link as the last component is refused too
    (``ELOOP``): a cache reads its own entries that way, so a planted link cannot make it read,
    or vouch for, a file outside the cache.
    """
    fd = _open(path, follow_symlinks)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        stream = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with stream:
        yield stream


def _flags(follow_symlinks: bool) -> int:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    return flags


def read_regular(
    path: str | os.PathLike[str], *, follow_symlinks: bool = True, max_bytes: int | None = None
) -> bytes:
    """The bytes of the regular file ``path`` (:func:`read_regular_status`)."""
    return read_regular_status(path, follow_symlinks=follow_symlinks, max_bytes=max_bytes)[0]


def read_regular_status(
    path: str | os.PathLike[str], *, follow_symlinks: bool = True, max_bytes: int | None = None
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` and the status of the file they were read from
    (:func:`open_regular`'s checks); :class:`TooLarge` past ``max_bytes``, whatever the file
    claims its size is. Read with one system call where the size holds, and without a
    buffered stream: a warm build reads hundreds of small files."""
    fd = _open(path, follow_symlinks)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFile(path)
        limit = max_bytes if max_bytes is not None else -1
        if 0 <= limit < status.st_size:
            raise TooLarge(path, limit)
        data = os.read(fd, status.st_size + 1)
        # Grown since, a size the file system does not keep, or a short read (network file
        # systems): read on to the end, or past the limit.
        if len(data) != status.st_size:
            chunks = [data]
            size = len(data)
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
                size += len(chunk)
                if 0 <= limit < size:
                    raise TooLarge(path, limit)
            data = b"".join(chunks)
        if 0 <= limit < len(data):
            raise TooLarge(path, limit)
        return data, status
    finally:
        os.close(fd)


def sha256_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> str:
    """The SHA-256 of the regular file ``path``, as lowercase hex (:func:`open_regular`'s
    checks). Read in large chunks without a buffered stream: a build hashes a hundred-odd
    headers of a few kilobytes, most in one read."""
    fd = _open(path, follow_symlinks)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        digest = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


#: How much of a file :func:`sha256_regular` reads at once.
_CHUNK = 1 << 20


def is_regular(path: Path) -> bool:
    """Whether ``path`` itself (not a link's target) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as an input file (``no such file``, ``not a regular file``,
    the system's reason for a path too long), or None when it is a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return exc.strerror or str(exc)
    except ValueError:  # what the system calls refuse before asking the system
        return "the path holds a NUL byte"
    if not stat.S_ISREG(mode):
        return "not a regular file (a folder, a FIFO or a device)"
    return None


def read_text(
    path: str | os.PathLike[str], *, follow_symlinks: bool = True, max_bytes: int | None = None
) -> str:
    """The UTF-8 text of the regular file ``path`` (:func:`read_regular`); text that is not
    UTF-8 is a :class:`ValueError` (``UnicodeDecodeError``)."""
    return read_regular(path, follow_symlinks=follow_symlinks, max_bytes=max_bytes).decode()


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


class IrregularEntry(PyptoUsageError, ValueError):
    """A tree holds something other than folders and regular files (:func:`walk_files`);
    ``relative`` is its path in the tree, ``what`` says what it is."""

    def __init__(self, relative: str, what: str) -> None:
        super().__init__(f"{what} in build tree: {relative}")
        self.relative = relative
        self.what = what


def walk_files(root: Path) -> list[Path]:
    """Every regular file under ``root``, as relative paths sorted by their POSIX spelling.

    A symbolic link, a FIFO, a device or a socket anywhere in the tree is an error
    (:class:`IrregularEntry`): a wheel cannot carry one, following a link would make the output
    depend on files outside the tree, and opening a FIFO blocks.
    """
    return [Path(relative) for relative in walk_file_names(root)]


def walk_file_names(root: Path) -> list[str]:
    """:func:`walk_files` as relative POSIX strings, sorted: a tree of a thousand files is
    listed with the types its folders' listings give (no ``lstat`` per entry), and without a
    path object per file, which costs more than the listing."""
    if not root.is_dir():
        raise NotADirectoryError(f"not a directory: {root}")
    found: list[str] = []
    pending = [""]
    while pending:
        prefix = pending.pop()
        with os.scandir(f"{root}/{prefix}" if prefix else root) as entries:
            for entry in entries:
                relative = prefix + entry.name
                if entry.is_symlink():
                    raise IrregularEntry(relative, "symbolic link")
                if entry.is_dir(follow_symlinks=False):
                    pending.append(relative + "/")
                elif entry.is_file(follow_symlinks=False):
                    found.append(relative)
                else:
                    raise IrregularEntry(relative, "FIFO, device or socket")
    return sorted(found)


def remove_entry(path: Path) -> None:
    """Remove ``path`` itself, whatever it is, following no link: a folder with its contents, a
    file, or a link (never what it points to); nothing if it is gone. Debris of a killed build
    is whatever that build left, so it is removed without trusting its kind."""
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
