"""The headers of ``include/pypto_build/`` that a sub-build's sources need, so they travel with it.

A tree is self-contained (``docs/runtime-compatibility.md``): PyPTO's runtime compiles it from its
sources with its own include directories plus the ones ``kernel_config.py`` names, so every header
of ours that a kernel or an orchestration includes is copied into the sub-build's
``include/pypto_build/`` and named relative to the tree. Only the headers actually reached are
copied — the ``#include`` closure of the sources — so a tree carries nothing it does not use.

A source reaches a header with ``#include "pypto_build/<name>"`` (kernels, through the include
directory ``kernel_config.py`` gives them) or ``#include "../include/pypto_build/<name>"``
(orchestrations, which PyPTO's runtime compiles with no extra include directory). A name that is
not one of our headers is left to the compiler to resolve (or reject).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pypto_build.builtins.registry import include_dir
from pypto_build.files import read_regular
from pypto_build.tree_layout import INCLUDE

#: The prefix of the headers' include names.
HEADER_PREFIX = "pypto_build/"

#: An include of one of our headers, from its ``#``: a pattern that starts with a literal is
#: searched for quickly, where one anchored at every line start is tried at every character
#: (a generated orchestration is thousands of lines); what precedes the ``#`` on its line is
#: checked apart.
_INCLUDE = re.compile(
    rb'#[ \t]*include[ \t]*"(?:\.\./' + INCLUDE.encode() + rb"/)?"
    rb"(" + HEADER_PREFIX.encode() + rb'[^"/]+)"'
)


def included_headers(text: bytes) -> list[str]:
    """The ``pypto_build/<name>`` headers ``text`` includes, in order of appearance: a
    directive's ``#`` is the first character of its line but for blanks and tabs."""
    found: list[str] = []
    for match in _INCLUDE.finditer(text):
        line_start = text.rfind(b"\n", 0, match.start()) + 1
        if not text[line_start : match.start()].strip(b" \t"):
            found.append(match.group(1).decode("ascii", errors="replace"))
    return found


def header_closure(
    sources: Iterable[bytes], headers: HeaderFiles | None = None
) -> dict[str, bytes]:
    """Our headers that ``sources`` reach, directly or through each other, by include name
    (``pypto_build/portability.h``), sorted by name; read through ``headers`` when given (a
    render shares one for all its sub-builds), else from the files."""
    headers = HeaderFiles() if headers is None else headers
    found: dict[str, bytes] = {}
    pending = [name for text in sources for name in headers.source_includes(text)]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        data = headers.read(name)
        if data is None:
            continue
        found[name] = data
        pending += headers.includes(name, data)
    return dict(sorted(found.items()))


class HeaderFiles:
    """Our headers as one render reads them: each file read (and its includes found) once.

    A render copies the header closure into every sub-build, and a model with hundreds of
    pipelines has hundreds of sub-builds per chip; reading and scanning the same few headers for
    each made the render's cost grow with the files read rather than the files written.
    """

    def __init__(self) -> None:
        self._root = include_dir()
        self._data: dict[str, bytes | None] = {}
        self._includes: dict[str, list[str]] = {}
        self._source_includes: dict[bytes, list[str]] = {}

    def read(self, name: str) -> bytes | None:
        """The header ``name`` (``pypto_build/<file>``), None if it is not one of ours."""
        if name not in self._data:
            path = self._root / name
            self._data[name] = read_regular(path) if path.is_file() else None
        return self._data[name]

    def includes(self, name: str, data: bytes) -> list[str]:
        """:func:`included_headers` of the header ``name`` whose bytes are ``data``."""
        if name not in self._includes:
            self._includes[name] = included_headers(data)
        return self._includes[name]

    def source_includes(self, text: bytes) -> list[str]:
        """:func:`included_headers` of a sub-build's source: the same kernels travel with
        every sub-build that calls them, so each distinct text is scanned once."""
        found = self._source_includes.get(text)
        if found is None:
            found = self._source_includes[text] = included_headers(text)
        return found
