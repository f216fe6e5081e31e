"""Reading the files a user, a manifest or a cache entry names, as regular files only.

Every part of pypto-build reads paths it did not choose: program files and kernel sources from
the command line or ``[tool.pypto]``, ``pyproject.toml``, the headers a cache entry's manifest
lists. A path naming a FIFO blocks a plain ``open`` forever and one naming ``/dev/zero`` never
reaches the end of its data, so a build would hang instead of failing. These readers open
without blocking, look at what was opened (not at the path, which may change in between) and
refuse anything but a regular file with :class:`NotRegularFile`, an :class:`OSError` that
callers already report as "the path and the reason". The module sits at the top of the package,
beside its parts, because every part reads such files and none may import another upward.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a folder or a socket, not a regular file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


class TooLarge(OSError):
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
