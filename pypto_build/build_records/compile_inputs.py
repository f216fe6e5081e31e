"""The files a finished build's compiles read outside the trees: the headers their dependency
files named, as the compile cache recorded them.

A cache hit runs no compiler, so no dependency file is written; what the compile read is in
the entry the hit came from (:mod:`pypto_build.chip_build.compile_cache.layout`:
``<root>/v2/entries/<key[:2]>/<key>/<entry>/``, each dependency with its SHA-256: the entry's
own under ``dependencies`` in ``manifest.json``, those outside the tree in ``shared.json``).
The entry of a binary is the one of its compile key whose artifact has the binary's hash,
whose ``shared.json`` has the hash its manifest names, and whose recorded files all still have
their recorded hashes — the entry a lookup accepts. Files inside the tree are left out: they
are the render's output, which a build record checks through the render's inputs.

Anything unexpected (no such entry, a manifest that does not parse) gives no answer rather than
a partial one: a build record without every header would trust binaries it cannot vouch for.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build.build_records.signatures import FileInput, Known
from pypto_build.chip_build.compile_cache.keys import PACKAGE, PACKAGE_PLACEHOLDER, compile_key
from pypto_build.chip_build.compile_cache.layout import LAYOUT, MANIFEST, SHARED, key_folder
from pypto_build.files import read_regular

if TYPE_CHECKING:
    from pypto_build.chip_build.compile import CompileReport
    from pypto_build.chip_build.toolchains import Toolchain


def compile_inputs(
    cache_root: Path,
    out_dir: Path,
    reports: Iterable[CompileReport],
    toolchain: Toolchain,
    known: Known | None = None,
) -> list[FileInput] | None:
    """Every file outside the trees that the compiles of ``reports`` (their trees now in
    ``out_dir/<chip>``) read, as it is now, sorted by path; None when an entry cannot be
    found for every binary. A file is hashed once, and not at all when ``known`` has it with
    its signature (:meth:`~.signatures.FileInput.read`)."""
    identity = toolchain.identity()
    files = _Files(known or {})
    found: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for report in reports:
        tree = out_dir / report.chip
        for result in report.results:
            source = read_regular(tree / result.job.source)
            key = compile_key(
                source=source,
                commands=result.plan.key_argv(),
                identity=identity,
                version=toolchain.version,
            )
            artifact = hashlib.sha256(read_regular(tree / result.artifact)).hexdigest()
            if (key, artifact) in seen:
                continue
            seen.add((key, artifact))
            dependencies = _entry_dependencies(cache_root, key, artifact, files)
            if dependencies is None:
                return None
            found.update(dependencies)
    return [files.read[path] for path in sorted(found)]


def _local(path: str) -> str:
    """A recorded path as a path of this installation (pypto-build's folder is recorded as
    its placeholder)."""
    return PACKAGE.local(path) if path.startswith(PACKAGE_PLACEHOLDER) else path


class _Files:
    """The files read so far, each read once."""

    def __init__(self, known: Known) -> None:
        self.known = known
        self.read: dict[str, FileInput] = {}

    def sha256(self, path: str) -> str | None:
        """``path``'s hash now; None when it cannot be read."""
        found = self.read.get(path)
        if found is None:
            try:
                found = self.read[path] = FileInput.read(Path(path), self.known)
            except OSError:
                return None
        return found.sha256


def _entry_dependencies(
    cache_root: Path, key: str, artifact: str, files: _Files
) -> list[str] | None:
    """The out-of-tree files of the entry of ``key`` that holds ``artifact`` and that a lookup
    would accept now; None without one."""
    key_dir = cache_root.joinpath(LAYOUT, *key_folder(key))
    try:
        entries = sorted(os.listdir(key_dir))
    except OSError:
        return None
    for name in entries:
        try:
            entry = key_dir / name
            manifest = json.loads(read_regular(entry / MANIFEST, follow_symlinks=False))
            if manifest.get("key") != key or manifest.get("artifact_sha256") != artifact:
                continue
            shared_bytes = read_regular(entry / SHARED, follow_symlinks=False)
            if hashlib.sha256(shared_bytes).hexdigest() != manifest["shared_sha256"]:
                continue  # not the list this entry was published with: a lookup evicts it
            listed = [*manifest["dependencies"], *json.loads(shared_bytes)]
            recorded = [
                (_local(item["path"]), item["sha256"]) for item in listed if not item["in_tree"]
            ]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if all(files.sha256(path) == digest for path, digest in recorded):
            return [path for path, _ in recorded]
    return None
