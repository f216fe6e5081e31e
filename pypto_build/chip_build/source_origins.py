"""Where a source of a chip tree came from, so that a compile error names the user's file.

External kernels (``external_source``) are copied into the tree byte for byte, and the tree's
``manifest.json`` records both sides: every file of the tree with its SHA-256, and every input
(the program files and external sources, by path relative to the project) with its own. A tree
file whose hash is an input's is that input, line for line; a compiler names it by its file name
(it runs in the source's folder), which :func:`with_origin` replaces by the user's path.
Rendered files (builtin kernels, orchestrations) have no such input and keep their tree path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pypto_build.files import read_text
from pypto_build.tree_layout import TreeLayout


def source_origins(tree: Path, source_root: Path | None = None) -> dict[PurePosixPath, str]:
    """Each file of the chip tree ``tree`` that is a copy of an input, with the input's path:
    under ``source_root`` when given, else relative to the project as recorded. Empty for a
    tree without a readable manifest."""
    try:
        document = json.loads(read_text(TreeLayout(tree).manifest))
        files: list[Mapping[str, str]] = document["files"]
        inputs: Mapping[str, str] = document["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    by_hash = {digest: name for name, digest in inputs.items() if not name.startswith(":")}
    origins: dict[PurePosixPath, str] = {}
    for entry in files:
        name = by_hash.get(entry.get("sha256", ""))
        if name is not None:
            origin = name if source_root is None else str(source_root / name)
            origins[PurePosixPath(entry["path"])] = origin
    return origins


def with_origin(message: str, source: PurePosixPath, origin: str | None) -> str:
    """A compile failure's ``message`` with the compiler's references to ``source`` (by its
    file name: ``stage_step.cpp:54:1: error: ...``) naming ``origin`` instead, and its first
    line saying which tree file that is."""
    if origin is None:
        return message
    name = re.compile(rf"(?m)(^|\s){re.escape(source.name)}(?=:)")
    head, _, rest = message.partition("\n")
    head = head.replace(source.as_posix(), f"{origin} (built as {source.as_posix()})", 1)
    return f"{head}\n{name.sub(lambda m: m.group(1) + origin, rest)}" if rest else head
