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

This module is the record itself: its shape, its key, its checks and how a finished build is
recorded. :mod:`.records` keeps records in the store's folder beside the compile cache, and
:mod:`pypto_build.plugin.last_build` joins the two halves of a hook build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pypto_build
from pypto_build.build_records.signatures import (
    FileInput,
    FolderInput,
    Known,
    distribution_inputs,
    package_folder,
    tree_inputs,
)
from pypto_build.files import read_regular, read_text, walk_files
from pypto_build.store.storage import Damaged
from pypto_build.tree_layout import TreeLayout

if TYPE_CHECKING:
    from pypto_build.chip_build.build import BuildResult
    from pypto_build.chip_build.toolchains import Toolchain

FORMAT = 1
#: The packages whose code and data decide what a render writes, besides the templates.
ENGINE_PACKAGES = ("pypto_build", "jinja2", "markupsafe")
_SHA256 = re.compile(r"[0-9a-f]{64}")


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
                return f"{name} moved"
        for file in self.files:
            if not file.unchanged():
                return f"{file.path} changed"
        for listing in self.folders:
            if not listing.unchanged():
                return f"the files in {listing.path} changed"
        return None

    def to_json(self) -> dict[str, Any]:
        """The record as :meth:`from_json` reads it."""
        return {
            "format": FORMAT,
            "key": self.key,
            "toolchain": self.toolchain,
            "packages": self.packages,
            "files": [
                {"path": f.path, "sha256": f.sha256, "signature": f.signature} for f in self.files
            ],
            "folders": [
                {"path": f.path, "names": f.names, "metadata_only": f.metadata_only}
                for f in self.folders
            ],
            "directories": self.directories,
            "outputs": [{"path": o.path, "mode": o.mode, "sha256": o.sha256} for o in self.outputs],
            "reports": [
                {
                    "chip": r.chip,
                    "toolchain": r.toolchain,
                    "toolchain_version": r.toolchain_version,
                    "binaries": r.binaries,
                }
                for r in self.reports
            ],
            "warnings": self.warnings,
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
    items: list[str] = _typed(values, list)
    if not all(type(value) is str for value in items):
        raise TypeError(f"{values!r} holds something else than strings")
    return items


def _ints(values: object) -> tuple[int, ...]:
    items = _typed(values, list)
    if not all(type(value) is int for value in items):
        raise TypeError(f"{values!r} holds something else than integers")
    return tuple(items)


def _digest(value: object) -> str:
    text = _str(value)
    if _SHA256.fullmatch(text) is None:
        raise ValueError(f"{text!r} is not a SHA-256")
    return text


def _relative(value: object) -> str:
    """A path inside the output folder: relative, normalized, never climbing out."""
    text = _str(value)
    parts = text.split("/")
    if text.startswith("/") or "\0" in text or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{text!r} is not a path inside the output folder")
    return text


def record_key(project: Path, settings: Mapping[str, Any]) -> str:
    """The key of ``project``'s record for ``settings`` (every setting as resolved, environment
    included, by key; those that change nothing a build makes left to the caller to drop),
    under this pypto-build, interpreter and import path (which decides the distributions whose
    template packages a build sees)."""
    document = {
        "format": FORMAT,
        "import_path": sys.path,
        "project": str(project.resolve()),
        "pypto_build": pypto_build.__version__,
        "python": sys.version,
        "settings": settings,
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
                "layout": toolchain.layout(get_chip(chip)),
                "platform": toolchain.platform(get_chip(chip)),
            }
            for chip in chips
        },
    }


def build_record(
    key: str,
    project: Path,
    result: BuildResult,
    toolchain_state: Mapping[str, Any],
    compiled_from: Sequence[FileInput],
    known: Known,
) -> BuildRecord:
    """The record of the full build ``result`` of ``project``, whose compiles read
    ``compiled_from`` (:func:`.compile_inputs.compile_inputs`) besides their trees; a file
    that kept the signature ``known`` (the previous record's inputs) has is not hashed again."""
    from pypto_build.builtins import all_packages

    out_dir = result.out_dir
    rendered_from: dict[Path, str] = {}  # each input file, with its hash as the render read it
    for report in result.reports:
        manifest = json.loads(read_text(TreeLayout(out_dir / report.chip).manifest))
        rendered_from.update(
            (project / name, digest)
            for name, digest in manifest["inputs"].items()
            if not name.startswith(":")
        )
    packages = {name: package_folder(name) for name in ENGINE_PACKAGES}
    roots = [folder for folder in packages.values() if folder is not None]
    engine = roots[0]
    roots += [p.root for p in all_packages() if not p.root.is_relative_to(engine)]
    files = list(compiled_from)
    for path, digest in sorted(rendered_from.items()):
        now = FileInput.read(path, known)
        if now.sha256 != digest:
            # Saved while the build ran: the trees hold the older bytes, so recording these
            # would make the next build ship them as up to date.
            raise Damaged(f"{path} changed during the build")
        files.append(now)
    folders: list[FolderInput] = []
    for root in roots:
        found, listed = tree_inputs(root, known)
        files += found
        folders += listed
    found, listed = distribution_inputs(sys.path, known)
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
