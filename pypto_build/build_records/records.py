"""Where build records (:mod:`.record`) are kept: in the store's folder (``PYPTO_CACHE_DIR``),
beside the compile cache, through the store's disk backend (:mod:`pypto_build.store.disk`)::

    <root>/projects/v1/records/<key>.json      one record per project, settings and import path
    <root>/projects/v1/blobs/<sha[:2]>/<sha>   the files of the recorded trees, by content
    <root>/projects/v1/tmp/                    staging of atomic writes

It is trusted as the compile cache is: nothing is followed through a symbolic link, only
regular files are read, a record must parse into exactly the expected shape and name its own
key, and a blob must have the hash it is stored under. Anything else is damaged: removed, with
one warning, and the build runs in full. Every file is written whole in a staging folder and
renamed into place, so a killed build leaves a whole record or none; the output folder a record is
restored into is replaced whole, as a build replaces it (:mod:`pypto_build.chip_build.publish`).

Records unused for a month, or beyond the 32 last used, are removed when another is written,
and with them, at once, the files no remaining record names: a save and that collection hold
the store's lock (``<root>/projects/v1/lock``), so no other build is between storing a file and
writing the record that names it. The records count against the cache's size bound
(``cache-max-size``, :mod:`.folder_bound`): :meth:`RecordStore.prune` removes the least
recently used ones when the bound asks for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build.build_records.record import FORMAT, BuildRecord, OutputFile
from pypto_build.files import read_regular, remove_entry, sha256_regular
from pypto_build.store.disk import STAGING, DiskStorage
from pypto_build.store.storage import Damaged, Unavailable

if TYPE_CHECKING:
    import filelock

STORE = Path("projects") / f"v{FORMAT}"
#: A record unused this long is removed when another is written.
RECORD_LIFETIME_S = 30 * 24 * 3600
#: Records kept at most, the last used: an isolated build (pip's default) installs
#: pypto-build into a new folder each time, so each records a key no later build looks up.
MAX_RECORDS = 32
#: How long a save waits for another build's save or collection (each takes milliseconds).
LOCK_TIMEOUT_S = 600.0


class RecordStore:
    """The build records under a compile cache folder ``cache_root`` (see the module)."""

    def __init__(self, cache_root: Path, *, warn: Callable[[str], None]) -> None:
        self.root = cache_root / STORE
        self.warn = warn
        self._storage = DiskStorage(cache_root, STORE.as_posix(), warn=warn, label="build record")

    # --- reading ---------------------------------------------------------------------------

    def load(self, key: str) -> BuildRecord | None:
        """The record of ``key``; None when there is none or it is damaged (then removed)."""
        name = f"records/{key}.json"
        path = self._storage.path(name)
        try:
            data = self._storage.get(name)
        except OSError as exc:
            self._damaged(path, exc.strerror or str(exc))
            return None
        if data is None:
            return None
        try:
            record = BuildRecord.from_json(json.loads(data), key)
        except ValueError:
            self._damaged(path, "not JSON")
            return None
        except Damaged as exc:
            self._damaged(path, str(exc))
            return None
        with contextlib.suppress(OSError):  # the last use, which removing old records goes by
            os.utime(path, follow_symlinks=False)
        return record

    def restore(self, record: BuildRecord, out_dir: Path) -> bool:
        """Write the recorded trees into ``out_dir``, replacing it whole as a build does;
        False (``out_dir`` untouched) when a blob is missing or damaged, or the store or the
        folder cannot be used (the full build then says why, if it cannot either)."""
        from pypto_build.chip_build.publish import replacing

        try:
            with replacing(out_dir, check=_check_output_folder) as staging:
                for directory, mode in record.directories:
                    os.mkdir(staging / directory, mode)
                    os.chmod(staging / directory, mode)
                for output in record.outputs:
                    _write_new(staging / output.path, self._blob(output.sha256), output.mode)
        except (Damaged, OSError, Unavailable) as exc:
            self._unusable(exc)
            return False
        return True

    def stage(self, record: BuildRecord, folder: Path, package: str) -> dict[str, str] | None:
        """Write the files of the recorded trees into the new folder ``folder``, flat (one
        file per entry, no subfolders to create and remove), for a wheel to ship as
        ``<package>/<path>``: the ``force_include`` entries in wheel order, or None when a
        blob is missing or damaged or cannot be read."""
        os.mkdir(folder)
        shipped = {}
        try:
            for index, output in enumerate(record.outputs):
                staged = folder / str(index)
                if not self._link(output, staged):
                    _write_new(staged, self._blob(output.sha256), output.mode)
                shipped[f"{package}/{output.path}"] = str(staged)
        except (Damaged, OSError) as exc:
            remove_entry(folder)
            self._unusable(exc)
            return None
        return {source: target for target, source in sorted(shipped.items())}

    def _unusable(self, exc: Exception) -> None:
        """Say why a record's files could not be used (the build then runs in full): a blob
        removed since (by another project's record, ``cache prune --all``) is no news."""
        if not isinstance(exc, FileNotFoundError):
            self.warn(f"build record: {exc}; building")

    def _link(self, output: OutputFile, staged: Path) -> bool:
        """Stage ``output`` as a link to its blob, checked through the link (so the bytes
        checked are the bytes shipped: a blob is replaced by a rename, never rewritten);
        False where a link cannot serve (another file system, another mode). Removing a link
        frees no blocks, which on a file system that discards freed blocks at once costs
        more than the copy."""
        path = self._blob_path(output.sha256)
        try:
            if stat.S_IMODE(os.lstat(path).st_mode) != output.mode:
                return False
            os.link(path, staged, follow_symlinks=False)
        except OSError:
            return False
        if not stat.S_ISREG(os.lstat(staged).st_mode) or not self._storage.real_folders(
            path.parent
        ):
            raise Damaged(f"{path} is not a regular file in a real folder")
        if sha256_regular(staged, follow_symlinks=False) != output.sha256:
            remove_entry(path)
            raise Damaged(f"removed {path}, which does not have the hash it is stored under")
        return True

    def _blob(self, digest: str) -> bytes:
        """The stored file of hash ``digest``, verified (:class:`FileNotFoundError` when there
        is none)."""
        data = self._storage.get(_blob_name(digest), sha256=digest)
        if data is None:
            raise FileNotFoundError(self._blob_path(digest))
        return data

    def _blob_path(self, digest: str) -> Path:
        return self._storage.path(_blob_name(digest))

    def _damaged(self, path: Path, reason: str) -> None:
        self.warn(f"build record: removed damaged {path} ({reason}); building")
        remove_entry(path)

    # --- writing ---------------------------------------------------------------------------

    def save(self, record: BuildRecord, out_dir: Path) -> None:
        """Store ``record`` with the files of its trees, read from ``out_dir``; then remove
        records unused for :data:`RECORD_LIFETIME_S` and the blobs no record names."""
        with self._locked():
            self._save(record, out_dir)

    def _save(self, record: BuildRecord, out_dir: Path) -> None:
        with self._storage.staging() as work:
            for output in record.outputs:
                with contextlib.suppress(Damaged, OSError):
                    self._blob(output.sha256)
                    continue
                data = read_regular(out_dir / output.path, follow_symlinks=False)
                if hashlib.sha256(data).hexdigest() != output.sha256:
                    raise Damaged(f"{out_dir / output.path} changed while it was recorded")
                self._storage.put(_blob_name(output.sha256), data, staging=work)
            text = json.dumps(record.to_json(), sort_keys=True, separators=(",", ":"))
            self._storage.put(f"records/{record.key}.json", text.encode(), staging=work)
        self._collect(keep=record.key)

    def clear(self) -> None:
        """Remove every record and stored file (``pypto-build cache prune --all``: the next
        build of every project runs in full, compiling what the emptied cache lacks)."""
        self._storage.clear()

    def _locked(self) -> filelock.BaseFileLock:
        """The store's lock (see the module), its folder created."""
        import filelock

        return filelock.FileLock(self._storage.folder() / "lock", timeout=LOCK_TIMEOUT_S)

    def size(self) -> int:
        """Bytes the store holds: its records and their files."""
        return self._storage.files_size([self.root / "records", *self._blob_folders()])

    def prune(self, max_size: int) -> None:
        """Remove the least recently used records, and then the files no remaining record
        names, until the store holds at most ``max_size`` bytes."""
        if not self._storage.real_folders(self.root / "records"):
            return
        with self._locked():
            while self.size() > max_size:
                used = self._records_by_use()
                if not used:
                    break
                remove_entry(Path(used[-1][1]))
                self._collect(keep=None)

    def _records_by_use(self) -> list[tuple[float, str]]:
        """Every record's last use and path, the most recently used first."""
        used: list[tuple[float, str]] = []
        for entry in os.scandir(self.root / "records"):
            with contextlib.suppress(OSError):
                used.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
        return sorted(used, reverse=True)

    def _blob_folders(self) -> list[str]:
        with contextlib.suppress(OSError):
            return [
                folder.path
                for folder in os.scandir(self.root / "blobs")
                if folder.is_dir(follow_symlinks=False)
            ]
        return []

    def _collect(self, keep: str | None) -> None:
        """Remove the records unused for :data:`RECORD_LIFETIME_S` and all but the
        :data:`MAX_RECORDS` last used (``keep``'s aside), then the blobs no remaining record
        names, and what killed writes left in ``tmp/``; under the store's lock, so nothing
        there belongs to a write in progress."""
        now = time.time()
        self._storage.remove_killed_staging()
        with contextlib.suppress(OSError):
            os.rmdir(self._storage.path(STAGING))  # made again by the next save
        named: set[str] = set()
        for rank, (last_use, path) in enumerate(self._records_by_use()):
            mine = Path(path).name == f"{keep}.json"
            if not mine and (rank >= MAX_RECORDS or now - last_use > RECORD_LIFETIME_S):
                remove_entry(Path(path))
                continue
            try:
                document = json.loads(read_regular(path, follow_symlinks=False))
                named.update(output["sha256"] for output in document["outputs"])
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a damaged record is removed when it is next read
        for folder in self._blob_folders():
            with contextlib.suppress(OSError):
                for blob in os.scandir(folder):
                    if blob.name not in named:
                        remove_entry(Path(blob.path))
                os.rmdir(folder)  # only when it is empty now: no empty folders are left


def _blob_name(digest: str) -> str:
    """The name of the stored file of hash ``digest``."""
    return f"blobs/{digest[:2]}/{digest}"


def _check_output_folder(out_dir: Path) -> None:
    """Refuse to replace a folder that is not an earlier output, as a build does (the engine's
    check is loaded only when there is a folder to check)."""
    if os.path.lexists(out_dir):
        from pypto_build.chip_build.subbuild import check_output_folder

        check_output_folder(out_dir)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` (never through a link) holding ``data`` with ``mode``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)
        os.fchmod(stream.fileno(), mode)
