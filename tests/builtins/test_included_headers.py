"""Which of our headers a source includes: a directive's ``#`` opens its line (blanks and tabs
before it allowed), both include spellings count, and a render scans each distinct source once."""

from __future__ import annotations

from pypto_build.builtins.headers import HeaderFiles, included_headers


def test_directives_at_the_start_of_a_line_only() -> None:
    text = (
        b'#include "pypto_build/a.h"\n'
        b' \t# include  "../include/pypto_build/b.h"\n'
        b'int x; #include "pypto_build/not_a_directive.h"\n'
        b'// #include "pypto_build/commented.h"\n'
        b'#include "other/c.h"\n'
        b'#include "pypto_build/nested/d.h"\n'
        b'  #include "pypto_build/e.h" #include "pypto_build/same_line.h"'
    )
    assert included_headers(text) == ["pypto_build/a.h", "pypto_build/b.h", "pypto_build/e.h"]


def test_a_source_is_scanned_once_per_render() -> None:
    headers = HeaderFiles()
    source = b'#include "pypto_build/portability.h"\n'
    first = headers.source_includes(source)
    assert first == ["pypto_build/portability.h"]
    assert headers.source_includes(bytes(source)) is first  # equal bytes: the same answer
    assert headers.source_includes(source + b'#include "pypto_build/x.h"\n') == [
        "pypto_build/portability.h",
        "pypto_build/x.h",
    ]
