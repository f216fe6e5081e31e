"""What a build read, in a form a later build can check without reading it again.

A no-op build (:mod:`.record`) must decide that nothing a full build would read has
changed, and decide it in far less time than the build takes. Each input file is therefore
kept with its SHA-256 and its *stat signature* — size, modification and status-change times,
inode and device. A file whose signature is unchanged has not been written since (writing a file
moves its status-change time, which no program can set back), so it is not read again; a file
whose signature moved is hashed, and only a different hash makes it changed (a ``touch``, a
``chmod`` or a copy with the same bytes do not).

A folder whose *set of names* matters (a package, to which a module may be added; a
``site-packages`` folder, to which a distribution registering a template package may be added)
is kept with its sorted listing.
"""

from __future__ import annotations

import importlib.util
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from pypto_build.files import sha256_regular

#: Folders of bytecode caches, which imports write and which no build reads.
_BYTECODE = "__pycache__"
#: Where a distribution's metadata lives in a folder of the import path.
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
#: The metadata file that registers a distribution's plugins (template packages among them).
ENTRY_POINTS = "entry_points.txt"


def signature(status: os.stat_result) -> tuple[int, ...]:
    """The parts of ``status`` that any write of the file changes."""
    return (
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
        status.st_ino,
        status.st_dev,
    )


@dataclass(frozen=True)
class FileInput:
    """A file a build read: its absolute path, content hash and stat signature."""

    path: str
    sha256: str
    signature: tuple[int, ...]

    @classmethod
    def read(cls, path: Path, known: Known | None = None) -> FileInput:
        """``path`` as it is now (an :class:`OSError` when it is not a readable regular file);
        its hash is taken from ``known`` (an earlier record's inputs by path) when the file has
        the signature recorded there.

        The signature is taken before the hash: a write in between moves the signature, so the
        next check hashes the file again instead of trusting a hash of older bytes."""
        status = os.stat(path)
        taken = signature(status)
        earlier = known.get(str(path)) if known is not None else None
        if earlier is not None and earlier.signature == taken:
            return earlier
        return cls(str(path), sha256_regular(path), taken)

    def unchanged(self) -> bool:
        """Whether the file still has the recorded bytes (a missing file has not)."""
        try:
            status = os.stat(self.path)
        except OSError:
            return False
        if not stat.S_ISREG(status.st_mode):
            return False
        if signature(status) == self.signature:
            return True
        try:
            return sha256_regular(self.path) == self.sha256
        except OSError:
            return False


@dataclass(frozen=True)
class FolderInput:
    """A folder whose listing a build depends on: its absolute path and sorted names (only
    the names of distributions' metadata, for a folder of the import path)."""

    path: str
    names: tuple[str, ...]
    metadata_only: bool = False

    @classmethod
    def read(cls, path: Path, *, metadata_only: bool = False) -> FolderInput:
        return cls(str(path), _listing(path, metadata_only), metadata_only)

    def unchanged(self) -> bool:
        try:
            return _listing(Path(self.path), self.metadata_only) == self.names
        except OSError:
            return False


def _listing(path: Path, metadata_only: bool) -> tuple[str, ...]:
    names = (name for name in os.listdir(path) if name != _BYTECODE)
    if metadata_only:
        names = (name for name in names if name.endswith(_METADATA_SUFFIXES))
    return tuple(sorted(names))


#: An earlier record's file inputs by path, whose hashes a new record reuses for the files that
#: kept their signature.
Known = Mapping[str, FileInput]


def package_folder(name: str) -> Path | None:
    """The folder of the installed top-level package ``name``, found without importing it;
    None when it is not installed as a folder."""
    spec = importlib.util.find_spec(name)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(locations[0]).resolve() if len(locations) == 1 else None


def tree_inputs(
    root: Path, known: Known | None = None
) -> tuple[list[FileInput], list[FolderInput]]:
    """Every file under ``root`` and the listing of every folder, bytecode caches left out:
    the code and data of an installed package, to which a file may also be added
    (:meth:`FileInput.read` for ``known``)."""
    files: list[FileInput] = []
    folders: list[FolderInput] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(name for name in dirnames if name != _BYTECODE)
        folder = Path(directory)
        folders.append(FolderInput.read(folder))
        files += [FileInput.read(folder / name, known) for name in sorted(filenames)]
    return files, folders


def distribution_inputs(
    path_entries: Iterable[str], known: Known | None = None
) -> tuple[list[FileInput], list[FolderInput]]:
    """What decides which distributions, and which of their plugins, this interpreter sees:
    the distributions' metadata folders in every folder of the import path, and each
    distribution's plugin table.

    A distribution installed, removed or reinstalled changes a listing or a table, so a
    template package registered through an entry point cannot appear unnoticed."""
    files: list[FileInput] = []
    folders: list[FolderInput] = []
    for folder in _existing_folders(path_entries):
        listing = FolderInput.read(folder, metadata_only=True)
        folders.append(listing)
        for name in listing.names:
            table = folder / name / ENTRY_POINTS
            if os.path.isfile(table):
                files.append(FileInput.read(table, known))
    return files, folders


def _existing_folders(path_entries: Iterable[str]) -> Iterator[Path]:
    seen: set[Path] = set()
    for entry in path_entries:
        folder = Path(entry or os.curdir).resolve()
        if folder not in seen and folder.is_dir():
            seen.add(folder)
            yield folder
