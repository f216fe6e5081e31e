"""Reading the make-style dependency file a compiler writes (``-MD -MF``): what the compile
read, which the compile cache records with each entry."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pypto_build.files import read_regular

#: One word of a dependency file: escaped spaces and ``#`` (``\ ``, ``\#``) and ``$$`` belong
#: to the word; any other whitespace ends it.
_DEPFILE_WORD = re.compile(r"(?:\\[ #]|\$\$|\S)+")
_DEPFILE_ESCAPE = re.compile(r"\\([ #])|\$(\$)")


def read_depfile(depfile: Path, cwd: Path) -> tuple[Path, ...]:
    """The prerequisites of a make-style dependency file (``-MD -MF``), as absolute paths,
    each once, in the order the file first names them.

    Relative paths are relative to ``cwd``, where the compiler ran. Handles line continuations,
    backslash-escaped spaces and ``#`` and ``$$``; the rule's target is dropped. One pass of a
    regular expression over the text: a compile of a kernel lists a hundred headers or more.
    """
    text = read_regular(depfile).decode("utf-8", errors="surrogateescape")
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    base = str(cwd)
    prerequisites: dict[str, None] = {}
    for match in _DEPFILE_WORD.finditer(text):
        word = match.group()
        if word.endswith(":"):  # a target ("out.so:"); everything else is a prerequisite
            continue
        if "\\" in word or "$" in word:
            word = _DEPFILE_ESCAPE.sub(lambda escape: escape.group(1) or escape.group(2), word)
        prerequisites[os.path.normpath(os.path.join(base, word))] = None
    return tuple(Path(path) for path in prerequisites)
