"""The store's folder on this machine: the backend of the compile cache and the build records.

A client's values live in its own folder of the user's cache folder (``<root>/<base>/``: the
compile cache's ``v2/``, the build records' ``projects/v1/``), and the backend trusts nothing
it finds there, because anything can be left in a folder: a killed build's half, a flipped bit,
a link planted by another program. So no path is followed through a symbolic link for writing
(every folder on the way is checked to be a real folder, a link or file in its place is removed
with a warning; lock files are checked to be regular files, and filelock opens them without
following a link), only regular files are read, never through a link, and a value read under
a SHA-256 must have it (else it is removed and :class:`~.storage.Damaged`).

Writes are atomic: a value is written whole in a staging folder beside the values (``tmp/``,
the same file system) and renamed into place, so a reader sees the old value, the new one, or
none. A staging folder is locked while in use, so :meth:`DiskStorage.remove_killed_staging`
can tell a killed build's leftovers from a running build's work; a value is removed by first
renaming it out into a staging folder, so it is atomically gone for readers.

Size accounting and eviction: :meth:`DiskStorage.entries` lists a client's entries with their
size and last use (a read refreshes the modification time a client names as the last use), and
:func:`evict` removes the least recently used until a size bound holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build.files import FILE_MODE, is_regular, read_regular, remove_entry
from pypto_build.store.storage import Damaged, Unavailable

if TYPE_CHECKING:
    import filelock

#: The staging folder beside a client's values.
STAGING = "tmp"


@dataclass(frozen=True)
class StoredEntry:
    """An entry folder of a client: where it is, when it was last used, the bytes it holds."""

    path: Path
    last_use: float
    size: int


class DiskStorage:
    """The folder ``root / base`` of the user's cache folder ``root`` (see the module).

    ``label`` starts every warning (``compile cache``, ``build record``), and ``folder_note``
    follows the one about a link or file removed where a folder belongs."""

    def __init__(
        self,
        root: Path,
        base: str,
        *,
        warn: Callable[[str], None],
        label: str,
        folder_note: str = "",
    ) -> None:
        self.root = root
        self.base = root / base
        self._parts = Path(base).parts
        self._warn = warn
        self._label = label
        self._folder_note = folder_note

    @property
    def writable(self) -> bool:
        return True

    # --- folders that are never links ------------------------------------------------------

    def folder(self, *parts: str) -> Path:
        """``<base>/<parts...>``, each folder created when missing and checked to be a real
        folder, not a link: a planted link must never make the store write outside itself. A
        link or file where a folder belongs is removed (the link, never its target). The user's
        folder ``root`` is the user's to choose (:class:`OSError` when it cannot be had)."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root
        for part in (*self._parts, *parts):
            path = path / part
            self._real_dir(path)
        return path

    def usable_folder(self, *parts: str) -> Path:
        """:meth:`folder`, :class:`~.storage.Unavailable` when it cannot be had."""
        try:
            return self.folder(*parts)
        except OSError as exc:
            raise Unavailable(f"{exc.filename or self.root}: {exc.strerror or exc}") from None

    def _real_dir(self, path: Path) -> None:
        try:
            os.mkdir(path)
            return
        except FileExistsError:
            pass
        if stat.S_ISDIR(os.lstat(path).st_mode):
            return
        self._warn(self._not_a_folder(path))
        remove_path(path)
        os.mkdir(path)

    def _not_a_folder(self, path: str | Path) -> str:
        return f"{self._label}: removed {path}, which is not a folder{self._folder_note}"

    def existing_folder(self, path: str | Path) -> bool:
        """Whether ``path`` (inside the store) is a real folder; a link or file there is
        removed."""
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return False
        if stat.S_ISDIR(mode):
            return True
        self._warn(self._not_a_folder(path))
        with contextlib.suppress(OSError):
            remove_path(path)
        return False

    def real_folders(self, folder: Path) -> bool:
        """Whether every folder from the user's folder down to ``folder`` is a real folder."""
        current = self.root
        for part in folder.relative_to(current).parts:
            current = current / part
            try:
                if not stat.S_ISDIR(os.lstat(current).st_mode):
                    return False
            except OSError:
                return False
        return True

    def clear_non_regular(self, path: Path) -> None:
        """Remove what is at ``path`` unless it is a regular file (a lock file must never be a
        link); :class:`~.storage.Unavailable` when that cannot be done."""
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise Unavailable(f"{path}: {exc.strerror or exc}") from None
        if stat.S_ISREG(mode):
            return
        self._warn(f"{self._label}: removed {path}, which is not a regular file (a link?)")
        try:
            remove_path(path)
        except OSError as exc:
            raise Unavailable(f"{path}: {exc.strerror or exc}") from None

    def lock(self, path: Path, timeout: float) -> filelock.FileLock:
        """A lock on the file ``path`` in the store, checked to be a regular file and never a
        link (filelock opens it without following one, the floor pyproject.toml pins)."""
        import filelock  # a miss or a write only: a warm build takes no lock

        self.clear_non_regular(path)
        return filelock.FileLock(path, timeout=timeout)

    # --- values ----------------------------------------------------------------------------

    def path(self, name: str) -> Path:
        """Where the value ``name`` is kept."""
        return self.base / name

    def get(
        self, name: str, *, limit: int | None = None, sha256: str | None = None
    ) -> bytes | None:
        """The value ``name`` (a regular file, read through real folders only), None when there
        is none; :class:`~.storage.Damaged` (the file removed) when it is larger than ``limit``
        or does not hash to ``sha256``. Other failures to read are :class:`OSError`."""
        path = self.path(name)
        if not self.real_folders(path.parent):
            return None
        try:
            data = read_regular(path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            remove_entry(path)
            raise Damaged(f"removed {path}, which does not have the hash it is stored under")
        if limit is not None and len(data) > limit:
            remove_entry(path)
            raise Damaged(f"removed {path}, which holds more than {limit} bytes")
        return data

    def put(self, name: str, data: bytes, *, staging: Path | None = None) -> None:
        """Write the value ``name`` by renaming a whole file staged in ``staging`` (a folder of
        :meth:`staging`; one of its own when not given) into place; whatever else has that name
        (a folder, a link) is removed first."""
        if staging is None:
            with self.staging() as work:
                self.put(name, data, staging=work)
            return
        path = self.path(name)
        folder = self.folder(*Path(name).parent.parts)
        fd, staged = tempfile.mkstemp(dir=staging, prefix=f"{path.name}.")
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
                os.fchmod(stream.fileno(), FILE_MODE)
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISREG(os.lstat(folder / path.name).st_mode):
                    remove_entry(folder / path.name)
            os.replace(staged, folder / path.name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(staged)
            raise

    # --- staging and removal ---------------------------------------------------------------

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A private folder beside the values (the same file system: renames are atomic),
        locked while in use: :meth:`remove_killed_staging` removes the staging folders whose
        lock is free, those of killed builds. :class:`~.storage.Unavailable` when the store
        cannot give one."""
        tmp = self.usable_folder(STAGING)
        try:
            work = Path(tempfile.mkdtemp(dir=tmp))
            fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            raise Unavailable(f"staging: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            yield work
        finally:
            shutil.rmtree(work, ignore_errors=True)
            os.close(fd)

    def remove(self, path: Path) -> None:
        """Remove the entry or value ``path``: first renamed out of the values (atomically gone
        for readers)."""
        try:
            # contextlib.suppress: another process removed it first
            with self.staging() as doomed, contextlib.suppress(OSError):
                os.rename(path, doomed / "entry")
        except Unavailable:
            with contextlib.suppress(OSError):
                remove_path(path)

    def remove_killed_staging(self) -> None:
        """Remove every staging folder no live process holds (their builds were killed), and
        whatever else is there (a link or a file is never one of ours)."""
        tmp = self.base / STAGING
        if not self.existing_folder(tmp):
            return
        for work in sorted(tmp.iterdir()):
            try:
                fd = os.open(work, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                with contextlib.suppress(OSError):
                    remove_path(work)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # in use by a running build
            else:
                shutil.rmtree(work, ignore_errors=True)
            finally:
                os.close(fd)

    def clear(self) -> None:
        """Remove every value of this client, and its folder."""
        remove_entry(self.base)

    # --- size accounting -------------------------------------------------------------------

    def entries(self, folder: str, depth: int, last_use: str) -> list[StoredEntry]:
        """Every entry folder ``depth`` levels below ``<base>/<folder>``, found without
        following a link (a link is not an entry), with the bytes of its files and its last
        use: the modification time of its file ``last_use`` (of the folder, without one)."""
        found: list[StoredEntry] = []
        for entry in real_subdirs(self.base / folder, depth):
            try:
                files = [f for f in entry.iterdir() if f.is_file() and not f.is_symlink()]
                size = sum(f.lstat().st_size for f in files)
                used = entry / last_use
                used_at = (used if is_regular(used) else entry).lstat().st_mtime
            except OSError:
                continue  # removed meanwhile
            found.append(StoredEntry(entry, used_at, size))
        return found

    def files_size(self, folders: Sequence[str | Path]) -> int:
        """Bytes of the regular files (never through a link) directly in ``folders``."""
        total = 0
        for folder in folders:
            with contextlib.suppress(OSError):
                for item in os.scandir(folder):
                    with contextlib.suppress(OSError):
                        if item.is_file(follow_symlinks=False):
                            total += item.stat(follow_symlinks=False).st_size
        return total


def evict(
    entries: Sequence[StoredEntry], max_size: int, remove: Callable[[StoredEntry], None]
) -> tuple[list[StoredEntry], int]:
    """``remove`` the least recently used of ``entries`` until they total at most ``max_size``
    bytes; the entries removed and the bytes left."""
    ordered = sorted(entries, key=lambda entry: (entry.last_use, entry.path))
    total = sum(entry.size for entry in ordered)
    removed: list[StoredEntry] = []
    for entry in ordered:
        if total <= max_size:
            break
        remove(entry)
        total -= entry.size
        removed.append(entry)
    return removed, total


def link_verified(path: str, opened: os.stat_result, output: Path) -> bool:
    """Give the value ``path``, whose bytes were read and verified from the file of status
    ``opened``, the name ``output`` too (replacing what is there), as a hard link: a warm build
    then creates no file and copies no byte, where writing a new file costs many times reading
    it. The new name is checked to be that very file (same device and inode), not whatever
    ``path`` names by now. False, leaving nothing behind, where that cannot be done (another
    file system, a mode other than a build output's, a replaced entry): the caller then writes
    the bytes.
    """
    if stat.S_IMODE(opened.st_mode) != FILE_MODE:
        return False
    try:
        present = os.lstat(output)
    except FileNotFoundError:
        # Nothing holds the name (a warm build of a fresh tree): linked under it at once, three
        # system calls where a temporary name takes five.
        return _link_checked(path, opened, os.fspath(output))
    except OSError:
        pass
    else:
        if (present.st_dev, present.st_ino) == (opened.st_dev, opened.st_ino):
            # Already that file (a rebuild in place): renaming a link onto another link of the
            # same file does nothing and would leave the temporary name behind.
            return True
    folder, _, name = os.fspath(output).rpartition("/")
    temporary = f"{folder}/.{name}.{os.getpid()}.{threading.get_ident()}.link"
    if not _link_checked(path, opened, temporary):
        return False
    try:
        os.replace(temporary, output)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)  # the output became a link of the same file meanwhile
    return True


def _link_checked(path: str, opened: os.stat_result, name: str) -> bool:
    """Link ``path`` as ``name`` (which must not exist) and check that ``name`` is the file of
    status ``opened``; False, with ``name`` removed again, when it is not or cannot be made."""
    try:
        os.link(path, name, follow_symlinks=False)
    except OSError:
        return False
    with contextlib.suppress(OSError):
        linked = os.lstat(name)
        if (linked.st_dev, linked.st_ino) == (opened.st_dev, opened.st_ino):
            return True
    with contextlib.suppress(OSError):
        os.unlink(name)
    return False


def remove_path(path: str | Path) -> None:
    """Remove ``path`` itself: a link is unlinked, never followed; a folder is removed with
    everything in it (rmtree follows no link either)."""
    if stat.S_ISDIR(os.lstat(path).st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def real_subdirs(root: Path, depth: int) -> list[Path]:
    """The folders ``depth`` levels below ``root``, through real folders only, sorted."""
    level = [root] if root.is_dir() and not root.is_symlink() else []
    for _ in range(depth):
        found: list[Path] = []
        for folder in level:
            with contextlib.suppress(OSError):
                found += [
                    Path(item.path)
                    for item in os.scandir(folder)
                    if item.is_dir(follow_symlinks=False)
                ]
        level = sorted(found)
    return level
