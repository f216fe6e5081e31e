"""Regenerating the schema file and the reference: ``python -m pypto_build.plugin.settings
[--check] [--docs FILE]``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pypto_build.plugin.settings.reference import with_reference
from pypto_build.plugin.settings.schema import SCHEMA_PATH, schema_text


def main(argv: Sequence[str] | None = None) -> int:
    """Write the schema file; ``--docs FILE`` also rewrites the reference in ``FILE``
    (``docs/settings.md``); ``--check`` only reports whether they are current (exit 1 if not)."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    args = [arg for arg in args if arg != "--check"]
    targets: list[tuple[Path, str]] = [(SCHEMA_PATH, schema_text())]
    if args[:1] == ["--docs"] and len(args) == 2:
        docs = Path(args[1])
        targets.append((docs, with_reference(docs.read_text(encoding="utf-8"))))
    elif args:
        print("usage: python -m pypto_build.plugin.settings [--check] [--docs FILE]")
        return 2
    stale = [path for path, text in targets if _read(path) != text]
    if check:
        for path in stale:
            print(f"{path} is out of date", file=sys.stderr)
        return 1 if stale else 0
    for path, text in targets:
        if path in stale:
            path.write_text(text, encoding="utf-8")
    return 0


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""
