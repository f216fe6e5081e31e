"""The headers of ``include/pypto_build/`` that a sub-build's sources need, so they travel with it.

A tree is self-contained (DESIGN §8.2): PyPTO's runtime compiles it from its sources with its own
include directories plus the ones ``kernel_config.py`` names, so every header of ours that a
kernel or an orchestration includes is copied into the sub-build's ``include/pypto_build/`` and
named relative to the tree. Only the headers actually reached are copied — the ``#include``
closure of the sources — so a tree carries nothing it does not use.

A source reaches a header with ``#include "pypto_build/<name>"`` (kernels, through the include
directory ``kernel_config.py`` gives them) or ``#include "../include/pypto_build/<name>"``
(orchestrations, which PyPTO's runtime compiles with no extra include directory). A name that is
not one of our headers is left to the compiler to resolve (or reject).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pypto_build.builtins.registry import include_dir

#: Where the headers go inside a sub-build, and the prefix of their include names.
SUBBUILD_INCLUDE_DIR = "include"
HEADER_PREFIX = "pypto_build/"

_INCLUDE = re.compile(
    rb'^[ \t]*#[ \t]*include[ \t]*"(?:\.\./' + SUBBUILD_INCLUDE_DIR.encode() + rb"/)?"
    rb"(" + HEADER_PREFIX.encode() + rb'[^"/]+)"',
    re.MULTILINE,
)


def included_headers(text: bytes) -> list[str]:
    """The ``pypto_build/<name>`` headers ``text`` includes, in order of appearance."""
    return [match.group(1).decode("ascii", errors="replace") for match in _INCLUDE.finditer(text)]


def header_closure(sources: Iterable[bytes]) -> dict[str, bytes]:
    """Our headers that ``sources`` reach, directly or through each other, by include name
    (``pypto_build/portability.h``), sorted by name."""
    root = include_dir()
    found: dict[str, bytes] = {}
    pending = [name for text in sources for name in included_headers(text)]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        path = root / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        found[name] = data
        pending += included_headers(data)
    return dict(sorted(found.items()))
