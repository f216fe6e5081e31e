"""The files a C/C++ source can read through ``#include``, found without running a compiler.

A compiler's ``-MD`` dependency file is the exact list, but when one command compiles several
sources (a CANN orchestration links the runtime's sources into its ``.so``, as upstream builds
it), GCC writes the file once per source, each time over the last, so only the last source's
headers survive. The others' are found here by scanning ``#include`` lines, the way PyPTO keys
its external kernels (``pypto/runtime/_external_source.py``): a quoted name is looked up beside
the including file, then in the include directories; an angled one in the include directories
only (anything not found there is a system header, part of the toolkit). Every ``#include``
counts, conditional or not, so the result can only be a superset of what the compiler reads,
which is what a cache key needs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from pypto_build.files import read_regular

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)


def include_closure(sources: Sequence[Path], include_dirs: Sequence[Path]) -> tuple[Path, ...]:
    """``sources`` and every file reachable from them through ``#include`` lines resolved in
    ``include_dirs``, each once, in the order first reached (sources first). A source that
    cannot be read is listed but not scanned."""
    found: dict[Path, None] = dict.fromkeys(sources)
    pending = list(sources)
    while pending:
        current = pending.pop(0)
        for header in _includes(current, include_dirs):
            if header not in found:
                found[header] = None
                pending.append(header)
    return tuple(found)


def _includes(path: Path, include_dirs: Sequence[Path]) -> list[Path]:
    try:
        text = read_regular(path).decode("utf-8", errors="replace")
    except OSError:
        return []
    headers: list[Path] = []
    for delimiter, name in _INCLUDE.findall(text):
        search = [path.parent, *include_dirs] if delimiter == '"' else list(include_dirs)
        located = next((d / name for d in search if (d / name).is_file()), None)
        if located is not None:
            headers.append(Path(os.path.normpath(located)))
    return headers
