"""The record of a project's last build, which lets a build that would change nothing ship the
trees it would make without lowering, rendering or compiling anything.

A model package is rebuilt far more often than anything its kernels are built from changes
(every ``pip install .`` of a development loop). Each successful build of the hatch hook
therefore records, under a key naming the project folder and its resolved settings, every input
it read and the trees it made:

* the program files and the hand-written kernel sources (the inputs each chip's
  ``manifest.json`` lists), and every file outside the trees that a compile read (the headers
  the compile cache recorded for each binary, :mod:`.compile_inputs`);
* the code and data of the engine: every file of ``pypto_build`` (templates, headers) and of the
  renderer's ``jinja2`` and ``markupsafe``, every third-party template package, and what decides
  which template packages are registered (the distributions on the import path and their
  plugin tables, :func:`~.signatures.distribution_inputs`);
* the toolchain the settings select (name, version, identity, and what each chip's binaries
  are built for), compared with the one selected now;
* the output trees, file by file (path, mode, SHA-256), their bytes kept content-addressed.

A later build with the same key verifies each input (:mod:`.signatures`: a file whose stat
signature moved is hashed again) and the toolchain, and then writes the recorded trees into the
output folder as a build does (:mod:`pypto_build.chip_build.publish`: a staging sibling
replaces it whole). Any difference — a program, a kernel, a header, a template, a setting, the
toolchain, pypto-build itself — means the full build, which records itself afresh.

Layout, in the compile cache's folder (``PYPTO_CACHE_DIR``)::

    <root>/projects/v1/records/<key>.json      one record per project and settings
    <root>/projects/v1/blobs/<sha[:2]>/<sha>   the files of the recorded trees, by content
    <root>/projects/v1/tmp/                    staging of atomic writes

It is trusted as the compile cache is: nothing is followed through a symbolic link, only
regular files are read, a record must parse into exactly the expected shape and name its own
key, and a blob must have the hash it is stored under. Anything else is damaged: removed, with
one warning, and the build runs in full. Every file is written to a temporary name and renamed
into place, so a killed build leaves a whole record or none.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pypto_build
from pypto_build.chip_build.fs import FILE_MODE, walk_files
from pypto_build.files import read_regular
from pypto_build.plugin.signatures import (
    FileInput,
    FolderInput,
    distribution_inputs,
    package_folder,
    tree_inputs,
)

if TYPE_CHECKING:
    from pypto_build.chip_build.build import BuildResult
    from pypto_build.chip_build.toolchains import Toolchain
    from pypto_build.plugin.settings import PyptoSettings

FORMAT = 1
STORE = Path("projects") / f"v{FORMAT}"
#: The packages whose code and data decide what a render writes, besides the templates.
ENGINE_PACKAGES = ("pypto_build", "jinja2", "markupsafe")
#: A record unused this long is removed when another is written.
RECORD_LIFETIME_S = 30 * 24 * 3600
#: A blob no record names is removed only once it is this old: a build that is writing a
#: record may have just stored it.
BLOB_GRACE_S = 3600
_SHA256_HEX = frozenset("0123456789abcdef")


class Damaged(Exception):
    """A record or blob this store could not have written."""


@dataclass(frozen=True)
class OutputFile:
    """One file of the recorded trees: its path under the output folder, mode and hash."""

    path: str
    mode: int
    sha256: str


@dataclass(frozen=True)
class ChipReport:
    """What the build said of one chip."""

    chip: str
    toolchain: str
    toolchain_version: str
    binaries: int


@dataclass(frozen=True)
class BuildRecord:
    """Everything a build read and made (see the module)."""

    key: str
    toolchain: Mapping[str, Any]
    packages: Mapping[str, str]
    files: tuple[FileInput, ...]
    folders: tuple[FolderInput, ...]
    directories: tuple[tuple[str, int], ...]
    outputs: tuple[OutputFile, ...]
    reports: tuple[ChipReport, ...]
    warnings: tuple[str, ...]

    def changed(self, toolchain: Mapping[str, Any]) -> str | None:
        """The first input that is not as recorded, in words; None when none changed."""
        if dict(toolchain) != dict(self.toolchain):
            return "the toolchain changed"
        for name, folder in self.packages.items():
            if str(package_folder(name)) != folder:
                return f"{name} is installed elsewhere"
        for file in self.files:
            if not file.unchanged():
                return f"{file.path} changed"
        for listing in self.folders:
            if not listing.unchanged():
                return f"the files in {listing.path} changed"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            **dataclasses.asdict(self),
            "directories": [list(item) for item in self.directories],
        }

    @classmethod
    def from_json(cls, document: object, key: str) -> BuildRecord:
        """The record ``document`` holds; :class:`Damaged` unless it has exactly this shape
        and names ``key``."""
        try:
            if not isinstance(document, dict) or document.get("format") != FORMAT:
                raise Damaged("not a build record of this version")
            if document["key"] != key:
                raise Damaged("the record of another key")
            record = cls(
                key=key,
                toolchain=_typed(document["toolchain"], dict),
                packages={_str(k): _str(v) for k, v in _typed(document["packages"], dict).items()},
                files=tuple(
                    FileInput(_str(f["path"]), _digest(f["sha256"]), _ints(f["signature"]))
                    for f in _typed(document["files"], list)
                ),
                folders=tuple(
                    FolderInput(
                        _str(f["path"]),
                        tuple(_strings(f["names"])),
                        _typed(f["metadata_only"], bool),
                    )
                    for f in _typed(document["folders"], list)
                ),
                directories=tuple(
                    (_relative(d[0]), _typed(d[1], int))
                    for d in _typed(document["directories"], list)
                ),
                outputs=tuple(
                    OutputFile(_relative(o["path"]), _typed(o["mode"], int), _digest(o["sha256"]))
                    for o in _typed(document["outputs"], list)
                ),
                reports=tuple(
                    ChipReport(
                        _str(r["chip"]),
                        _str(r["toolchain"]),
                        _str(r["toolchain_version"]),
                        _typed(r["binaries"], int),
                    )
                    for r in _typed(document["reports"], list)
                ),
                warnings=tuple(_strings(document["warnings"])),
            )
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise Damaged(f"malformed ({exc})") from None
        return record


def _typed(value: Any, kind: type) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{value!r} is not a {kind.__name__}")
    return value


def _str(value: object) -> str:
    return str(_typed(value, str))


def _strings(values: object) -> list[str]:
    return [_str(value) for value in _typed(values, list)]


def _ints(values: object) -> tuple[int, ...]:
    return tuple(_typed(value, int) for value in _typed(values, list))


def _digest(value: object) -> str:
    text = _str(value)
    if len(text) != 64 or not set(text) <= _SHA256_HEX:
        raise ValueError(f"{text!r} is not a SHA-256")
    return text


def _relative(value: object) -> str:
    """A path inside the output folder: relative, normalized, never climbing out."""
    text = _str(value)
    parts = text.split("/")
    if text.startswith("/") or "\0" in text or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{text!r} is not a path inside the output folder")
    return text


def record_key(project: Path, settings: PyptoSettings) -> str:
    """The key of ``project``'s record for ``settings`` (as resolved, environment included),
    under this pypto-build, interpreter and import path (which decides the distributions whose
    template packages a build sees)."""
    document = {
        "format": FORMAT,
        "import_path": sys.path,
        "project": str(project.resolve()),
        "pypto_build": pypto_build.__version__,
        "python": sys.version,
        "settings": dataclasses.asdict(settings),
    }
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), default=list)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def toolchain_description(toolchain: Toolchain, chips: Sequence[str]) -> dict[str, Any]:
    """What the toolchain contributes to the trees, for comparing two selections."""
    from pypto_build.chip_build.chips import get_chip

    return {
        "identity": toolchain.identity(),
        "name": toolchain.name,
        "version": toolchain.version,
        "chips": {
            chip: {
                "context": toolchain.binary_context(get_chip(chip)),
                "platform": toolchain.platform(get_chip(chip)),
            }
            for chip in chips
        },
    }


class RecordStore:
    """The build records under a compile cache folder ``cache_root`` (see the module)."""

    def __init__(self, cache_root: Path, *, warn: Callable[[str], None]) -> None:
        self.root = cache_root / STORE
        self.warn = warn

    # --- reading ---------------------------------------------------------------------------

    def load(self, key: str) -> BuildRecord | None:
        """The record of ``key``; None when there is none or it is damaged (then removed)."""
        path = self.root / "records" / f"{key}.json"
        if not self._real_folders(path.parent):
            return None
        try:
            data = read_regular(path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._damaged(path, exc.strerror or str(exc))
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
        False (``out_dir`` untouched) when a blob is missing or damaged."""
        from pypto_build.chip_build.publish import replacing

        try:
            with replacing(out_dir, check=_check_output_folder) as staging:
                for directory, mode in record.directories:
                    os.mkdir(staging / directory, mode)
                    os.chmod(staging / directory, mode)
                for output in record.outputs:
                    _write_new(staging / output.path, self._blob(output.sha256), output.mode)
        except (Damaged, FileNotFoundError) as exc:
            if isinstance(exc, Damaged):
                self.warn(f"build record: {exc}; building")
            return False
        return True

    def stage(self, record: BuildRecord, folder: Path, package: str) -> dict[str, str] | None:
        """Write the files of the recorded trees into the new folder ``folder``, flat (one
        file per entry, no subfolders to create and remove), for a wheel to ship as
        ``<package>/<path>``: the ``force_include`` entries in wheel order, or None when a
        blob is missing or damaged."""
        os.mkdir(folder)
        shipped = {}
        try:
            for index, output in enumerate(record.outputs):
                staged = folder / str(index)
                _write_new(staged, self._blob(output.sha256), output.mode)
                shipped[f"{package}/{output.path}"] = str(staged)
        except (Damaged, FileNotFoundError) as exc:
            _remove(folder)
            if isinstance(exc, Damaged):
                self.warn(f"build record: {exc}; building")
            return None
        return {source: target for target, source in sorted(shipped.items())}

    def _blob(self, digest: str) -> bytes:
        path = self._blob_path(digest)
        if not self._real_folders(path.parent):
            raise FileNotFoundError(path)
        data = read_regular(path, follow_symlinks=False)
        if hashlib.sha256(data).hexdigest() != digest:
            _remove(path)
            raise Damaged(f"removed {path}, which does not have the hash it is stored under")
        return data

    def _blob_path(self, digest: str) -> Path:
        return self.root / "blobs" / digest[:2] / digest

    def _real_folders(self, folder: Path) -> bool:
        """Whether every folder from the cache root down to ``folder`` is a real folder."""
        current = self.root.parent.parent
        for part in folder.relative_to(current).parts:
            current = current / part
            try:
                if not stat.S_ISDIR(os.lstat(current).st_mode):
                    return False
            except OSError:
                return False
        return True

    def _damaged(self, path: Path, reason: str) -> None:
        self.warn(f"build record: removed damaged {path} ({reason}); building")
        _remove(path)

    # --- writing ---------------------------------------------------------------------------

    def save(self, record: BuildRecord, out_dir: Path) -> None:
        """Store ``record`` with the files of its trees, read from ``out_dir``; then remove
        records unused for :data:`RECORD_LIFETIME_S` and the blobs no record names."""
        tmp = self._folder("tmp")
        for output in record.outputs:
            path = self._blob_path(output.sha256)
            with contextlib.suppress(Damaged, OSError):
                self._blob(output.sha256)
                continue
            data = read_regular(out_dir / output.path, follow_symlinks=False)
            if hashlib.sha256(data).hexdigest() != output.sha256:
                raise Damaged(f"{out_dir / output.path} changed while it was recorded")
            _write_atomic(self._folder("blobs", output.sha256[:2]), path.name, data, tmp)
        text = json.dumps(record.to_json(), sort_keys=True, separators=(",", ":"))
        _write_atomic(self._folder("records"), f"{record.key}.json", text.encode(), tmp)
        self._collect(keep=record.key)

    def _folder(self, *parts: str) -> Path:
        """``<store>/<parts>``, every folder of the way created and checked to be a real
        folder (a link or file in the way is removed)."""
        path = self.root.parent.parent
        for part in (*STORE.parts, *parts):
            path = path / part
            try:
                os.mkdir(path)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    self.warn(f"build record: removed {path}, which is not a folder")
                    _remove(path)
                    os.mkdir(path)
        return path

    def _collect(self, keep: str) -> None:
        """Remove old records, then the blobs none of the others names, and what killed
        writes left in ``tmp/``."""
        now = time.time()
        for staged in os.scandir(self.root / "tmp"):
            with contextlib.suppress(OSError):
                if now - staged.stat(follow_symlinks=False).st_mtime > BLOB_GRACE_S:
                    _remove(Path(staged.path))
        named: set[str] = set()
        records = self.root / "records"
        for entry in os.scandir(records):
            try:
                if entry.name != f"{keep}.json" and (
                    now - entry.stat(follow_symlinks=False).st_mtime > RECORD_LIFETIME_S
                ):
                    _remove(Path(entry.path))
                    continue
                document = json.loads(read_regular(entry.path, follow_symlinks=False))
                named.update(output["sha256"] for output in document["outputs"])
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a damaged record is removed when it is next read
        for folder in os.scandir(self.root / "blobs"):
            if not folder.is_dir(follow_symlinks=False):
                continue
            for blob in os.scandir(folder.path):
                with contextlib.suppress(OSError):
                    old = now - blob.stat(follow_symlinks=False).st_mtime > BLOB_GRACE_S
                    if blob.name not in named and old:
                        _remove(Path(blob.path))


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


def _write_atomic(folder: Path, name: str, data: bytes, tmp: Path) -> None:
    """Write ``folder/name`` by renaming a whole file staged in ``tmp`` into place."""
    fd, staged = tempfile.mkstemp(dir=tmp, prefix=f"{name}.")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            os.fchmod(stream.fileno(), FILE_MODE)
        os.replace(staged, folder / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise


def _remove(path: Path) -> None:
    """Remove ``path`` itself, following no link."""
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


# --- recording a finished build --------------------------------------------------------------


def build_record(
    key: str,
    project: Path,
    result: BuildResult,
    toolchain_state: Mapping[str, Any],
    compiled_from: Sequence[Path],
) -> BuildRecord:
    """The record of the full build ``result`` of ``project``, whose compiles read
    ``compiled_from`` (:func:`.compile_inputs.compile_inputs`) besides their trees."""
    from pypto_build.builtins import all_packages

    out_dir = result.out_dir
    read: list[Path] = [*compiled_from]
    for report in result.reports:
        manifest = json.loads((out_dir / report.chip / "manifest.json").read_text("utf-8"))
        read += [project / name for name in manifest["inputs"] if not name.startswith(":")]
    packages = {name: package_folder(name) for name in ENGINE_PACKAGES}
    roots = [folder for folder in packages.values() if folder is not None]
    engine = roots[0]
    roots += [p.root for p in all_packages() if not p.root.is_relative_to(engine)]
    files = [FileInput.read(path) for path in sorted(set(read))]
    folders: list[FolderInput] = []
    for root in roots:
        found, listed = tree_inputs(root)
        files += found
        folders += listed
    found, listed = distribution_inputs(sys.path)
    files += found
    folders += listed
    chips = [report.chip for report in result.reports]
    outputs, directories = _outputs(out_dir, chips)
    return BuildRecord(
        key=key,
        toolchain=toolchain_state,
        packages={name: str(folder) for name, folder in packages.items()},
        files=tuple(files),
        folders=tuple(folders),
        directories=directories,
        outputs=outputs,
        reports=tuple(
            ChipReport(r.chip, r.toolchain, r.toolchain_version, len(r.results))
            for r in result.reports
        ),
        warnings=tuple(warning.render() for warning in result.warnings),
    )


def _outputs(
    out_dir: Path, chips: Sequence[str]
) -> tuple[tuple[OutputFile, ...], tuple[tuple[str, int], ...]]:
    """Every file and folder of the chip trees in ``out_dir``, with their modes (the compile
    logs beside them are not part of the output)."""
    outputs: list[OutputFile] = []
    directories: list[tuple[str, int]] = []
    for chip in chips:
        directories += [(chip, stat.S_IMODE(os.stat(out_dir / chip).st_mode))]
        for folder in _folders_under(out_dir / chip):
            mode = stat.S_IMODE(os.stat(out_dir / chip / folder).st_mode)
            directories.append((f"{chip}/{folder}", mode))
        for relative in walk_files(out_dir / chip):
            path = out_dir / chip / relative
            data = read_regular(path, follow_symlinks=False)
            outputs.append(
                OutputFile(
                    f"{chip}/{relative.as_posix()}",
                    stat.S_IMODE(os.stat(path).st_mode),
                    hashlib.sha256(data).hexdigest(),
                )
            )
    return tuple(outputs), tuple(directories)


def _folders_under(root: Path) -> Iterator[str]:
    """The folders under ``root``, parents before children, as POSIX paths."""
    for directory, dirnames, _ in os.walk(root):
        dirnames.sort()
        for name in dirnames:
            yield (Path(directory) / name).relative_to(root).as_posix()


# --- the two halves of a build ---------------------------------------------------------------


@dataclass(frozen=True)
class Unchanged:
    """What a build found before deciding whether the engine must run."""

    toolchain: Toolchain
    #: What the toolchain contributes to the trees (:func:`toolchain_description`).
    toolchain_state: Mapping[str, Any]
    cache_root: Path
    store: RecordStore
    key: str
    #: The record of the last build, when nothing it read has changed.
    record: BuildRecord | None


def unchanged_build(
    project: Path,
    settings: PyptoSettings,
    toolchain: Toolchain,
    *,
    warn: Callable[[str], None],
) -> Unchanged:
    """Look for the record of ``project``'s last build with ``settings`` in the user's
    compile cache folder, and keep it when nothing it read has changed."""
    from pypto_build.chip_build.cache_location import default_cache_dir

    cache_root = default_cache_dir()
    store = RecordStore(cache_root, warn=warn)
    key = record_key(project, settings)
    state = toolchain_description(toolchain, settings.chips)
    record = store.load(key)
    if record is not None and record.changed(state) is not None:
        record = None
    return Unchanged(toolchain, state, cache_root, store, key, record)


def remember(
    unchanged: Unchanged,
    project: Path,
    settings: PyptoSettings,
    result: BuildResult,
    cache_root: Path,
) -> None:
    """Record the full build ``result`` for later builds; when what its compiles read cannot
    be told (the cache could not keep it), nothing is recorded and later builds run in full.
    A record that cannot be written costs a warning, never the build."""
    from pypto_build.plugin.compile_inputs import compile_inputs

    store = unchanged.store
    try:
        compiled_from = compile_inputs(
            cache_root, result.out_dir, result.reports, unchanged.toolchain
        )
        if compiled_from is None:
            return
        record = build_record(
            unchanged.key, project, result, unchanged.toolchain_state, compiled_from
        )
        store.save(record, result.out_dir)
    except (OSError, ValueError, Damaged) as exc:
        store.warn(f"build record: not written ({exc}); the next build runs in full")
