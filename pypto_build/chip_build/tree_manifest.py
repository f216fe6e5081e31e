"""``manifest.json``: what a chip sub-build contains and what it was built from.

The manifest lets a consumer (the simulator before it runs a tree, CI, a user auditing a wheel)
check a sub-build without rebuilding it: every file under the sub-build root with its SHA-256
and size, the toolchain and its version, and the hashes of the inputs. It is itself
deterministic — sorted keys, sorted paths, relative POSIX paths only, no timestamps — so two
identical builds write identical manifests.

Python's bytecode caches (``__pycache__`` folders) are not part of a tree: pip writes them
beside every ``.py`` file of a wheel it installs (``kernel_config.py``, the HOST orchestrator),
so the manifest neither lists them nor counts them as added files.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from pypto_build.chip_build.chips import get_chip
from pypto_build.files import atomic_write_text, read_text, sha256_regular, walk_file_names
from pypto_build.tree_layout import MANIFEST

#: Bumped when the manifest's shape changes, so a reader can refuse a format it does not know.
FORMAT_VERSION = 1

_SHA256 = re.compile(r"[0-9a-f]{64}")
#: Folders of bytecode caches, which an installer or an import may add to a tree.
_BYTECODE_CACHE = "__pycache__"


#: Stands for the list of files while the rest of a manifest is encoded: a path, a hash or an
#: input's name cannot hold a NUL character.
_FILES = "\0files\0"
#: One entry of the list of files as ``json.dumps(..., indent=2, sort_keys=True)`` writes it.
_FILE_ENTRY = '    {{\n      "path": {},\n      "sha256": {},\n      "size": {}\n    }}'


def _manifest_text(document: dict[str, object], files: list[dict[str, Any]]) -> str:
    """``json.dumps(document, indent=2, sort_keys=True)``, its ``files`` (a tree lists
    thousands) written by a template of one entry instead of the encoder's Python code, which
    an indented document takes: the same text."""
    marker = encode_basestring_ascii(_FILES)
    text = json.dumps({**document, "files": _FILES}, indent=2, sort_keys=True)
    if not files or text.count(marker) != 1:
        return json.dumps(document, indent=2, sort_keys=True)
    entries = ",\n".join(
        _FILE_ENTRY.format(
            encode_basestring_ascii(entry["path"]),
            encode_basestring_ascii(entry["sha256"]),
            int.__repr__(entry["size"]),
        )
        for entry in files
    )
    return text.replace(marker, f"[\n{entries}\n  ]")


@dataclass(frozen=True)
class ManifestProblem:
    """One way a tree differs from its manifest: the file (relative to the tree) and what."""

    path: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


def write_manifest(
    root: Path,
    *,
    chip: str,
    toolchain: str,
    toolchain_version: str,
    inputs: Mapping[str, str],
    binary_context: Mapping[str, object] | None = None,
    contents: Mapping[str, bytes] | None = None,
    written: Mapping[str, tuple[str, int]] | None = None,
) -> Path:
    """Write ``<root>/manifest.json`` describing every other file under ``root``.

    ``contents``, when given, are those files by relative path as the caller has just written
    them into a folder of its own (a render's staging folder): they are described from memory
    rather than read back. ``written`` gives the SHA-256 and size of some of the files, by
    relative path, as the caller has just placed or read them (a compile's binaries and
    sources); the others are read.

    ``inputs`` maps each input's name (a path relative to the project, or a builtin handle;
    never an absolute path) to the lowercase hex SHA-256 of its content; ``binary_context`` is
    what the binaries were built for, as PyPTO's runtime checks it (``cache/binary_context.json``
    of every sub-build), when they were built for it. Returns the path written. Write it last:
    files added afterwards are reported by :func:`verify_manifest`.
    """
    get_chip(chip)
    for name, digest in inputs.items():
        if PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute():
            raise ValueError(f"manifest input '{name}' is an absolute path")
        if not _SHA256.fullmatch(digest):
            raise ValueError(f"manifest input '{name}' has no SHA-256 hex digest: '{digest}'")
    if contents is None:
        written = written or {}
        files = [
            {"path": path, "sha256": written[path][0], "size": written[path][1]}
            if path in written
            else {
                "path": path,
                "sha256": sha256_regular(root / path, follow_symlinks=False),
                "size": (root / path).stat().st_size,
            }
            for path in _content_paths(root)
        ]
    else:
        # Every sub-build of a tree carries the same kernels and headers: each distinct
        # content is hashed once.
        digests: dict[bytes, str] = {}
        files = []
        for path, data in sorted(contents.items()):
            if path == MANIFEST or _BYTECODE_CACHE in path.split("/"):
                continue
            if data not in digests:
                digests[data] = hashlib.sha256(data).hexdigest()
            files.append({"path": path, "sha256": digests[data], "size": len(data)})
    document: dict[str, object] = {
        "chip": chip,
        "files": files,
        "format_version": FORMAT_VERSION,
        "inputs": dict(inputs),
        "toolchain": {"name": toolchain, "version": toolchain_version},
    }
    if binary_context is not None:
        document["binary_context"] = dict(binary_context)
    target = root / MANIFEST
    atomic_write_text(target, _manifest_text(document, files) + "\n")
    return target


def verify_manifest(root: Path) -> list[ManifestProblem]:
    """Differences between ``root`` and its manifest, one per path, sorted; empty if it matches.

    Reports files that are missing, changed (size or SHA-256) or not listed, and a manifest that
    is missing or unreadable.
    """
    manifest_path = root / MANIFEST
    if not manifest_path.is_file():
        return [ManifestProblem(MANIFEST, "missing")]
    try:
        recorded = _recorded_files(json.loads(read_text(manifest_path, follow_symlinks=False)))
        present = set(_content_paths(root))
    except (OSError, ValueError) as exc:  # not JSON, a malformed entry, a link or FIFO in the tree
        return [ManifestProblem(MANIFEST, f"unreadable: {exc}")]
    problems: list[ManifestProblem] = []
    for path in sorted(present | recorded.keys()):
        if path not in recorded:
            problems.append(ManifestProblem(path, f"not in {MANIFEST}"))
        elif path not in present:
            problems.append(ManifestProblem(path, f"missing ({MANIFEST} lists it)"))
        else:
            digest, size = recorded[path]
            actual_size = (root / path).stat().st_size
            if actual_size != size:
                what = f"size {actual_size} differs from {MANIFEST}'s {size}"
                problems.append(ManifestProblem(path, what))
            elif sha256_regular(root / path, follow_symlinks=False) != digest:
                problems.append(ManifestProblem(path, f"sha256 differs from {MANIFEST}"))
    return problems


def _content_paths(root: Path) -> list[str]:
    """Every file under ``root`` except the manifest and bytecode caches, as sorted relative
    POSIX paths."""
    return [
        path
        for path in walk_file_names(root)
        if path != MANIFEST and _BYTECODE_CACHE not in path.split("/")
    ]


def _recorded_files(document: object) -> dict[str, tuple[str, int]]:
    """The ``files`` list of a parsed manifest as ``path -> (sha256, size)``; checks its shape."""
    if not isinstance(document, dict) or document.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"not a format {FORMAT_VERSION} manifest")
    files = document.get("files")
    if not isinstance(files, list):
        raise ValueError("'files' is not a list")
    recorded: dict[str, tuple[str, int]] = {}
    for entry in files:
        if not isinstance(entry, dict):
            raise ValueError(f"file entry {entry!r} is not an object")
        path, digest, size = entry.get("path"), entry.get("sha256"), entry.get("size")
        if not (
            isinstance(path, str)
            and isinstance(digest, str)
            and isinstance(size, int)
            and not isinstance(size, bool)
        ):
            raise ValueError(f"file entry {entry!r} needs a string path and sha256 and an int size")
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or pure.as_posix() != path:
            raise ValueError(f"file path '{path}' is not a normalized relative path")
        if path in recorded:
            raise ValueError(f"file '{path}' is listed twice")
        recorded[path] = (digest, size)
    return recorded
