"""The files a finished build's compiles read outside the trees: the headers their dependency
files named, as the compile cache recorded them.

A cache hit runs no compiler, so no dependency file is written; what the compile read is in
the entry the hit came from (:mod:`pypto_build.chip_build.cache`: ``<root>/v1/entries/<key[:2]>
/<key>/<entry>/manifest.json``, each dependency with its SHA-256). The entry of a binary is the
one of its compile key whose artifact has the binary's hash and whose recorded files all still
have their recorded hashes — the entry a lookup accepts. Files inside the tree are left out:
they are the render's output, which a build record checks through the render's inputs.

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

from pypto_build.chip_build.cache import FORMAT, PACKAGE, compile_key
from pypto_build.files import read_regular, sha256_regular

if TYPE_CHECKING:
    from pypto_build.chip_build.compile import CompileReport
    from pypto_build.chip_build.toolchains import Toolchain


def compile_inputs(
    cache_root: Path, out_dir: Path, reports: Iterable[CompileReport], toolchain: Toolchain
) -> list[Path] | None:
    """Every file outside the trees that the compiles of ``reports`` (their trees now in
    ``out_dir/<chip>``) read, sorted; None when an entry cannot be found for every binary."""
    identity = toolchain.identity()
    found: set[Path] = set()
    seen: set[tuple[str, str]] = set()
    for report in reports:
        tree = out_dir / report.chip
        for result in report.results:
            source = (tree / result.job.source).read_bytes()
            key = compile_key(
                source=source,
                commands=result.plan.key_argv(),
                identity=identity,
                version=toolchain.version,
            )
            artifact = hashlib.sha256((tree / result.artifact).read_bytes()).hexdigest()
            if (key, artifact) in seen:
                continue
            seen.add((key, artifact))
            dependencies = _entry_dependencies(cache_root, key, artifact)
            if dependencies is None:
                return None
            found.update(dependencies)
    return sorted(found)


def _entry_dependencies(cache_root: Path, key: str, artifact: str) -> list[Path] | None:
    """The out-of-tree files of the entry of ``key`` that holds ``artifact`` and that a lookup
    would accept now; None without one."""
    key_dir = cache_root / FORMAT / "entries" / key[:2] / key
    try:
        entries = sorted(os.listdir(key_dir))
    except OSError:
        return None
    for name in entries:
        try:
            path = key_dir / name / "manifest.json"
            manifest = json.loads(read_regular(path, follow_symlinks=False))
            if manifest.get("key") != key or manifest.get("artifact_sha256") != artifact:
                continue
            recorded = [
                (Path(PACKAGE.local(item["path"])), item["sha256"])
                for item in manifest["dependencies"]
                if not item["in_tree"]
            ]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if all(_hash(path) == digest for path, digest in recorded):
            return [path for path, _ in recorded]
    return None


def _hash(path: Path) -> str | None:
    try:
        return sha256_regular(path)
    except OSError:
        return None
