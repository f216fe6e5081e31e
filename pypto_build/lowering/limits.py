"""How large a program file the front end takes: refused above these, before it is parsed.

Every build parses its program files whole and keeps a program's IR, its analyses and its
generated text in memory, so a generated file of millions of statements would take minutes
and gigabytes before failing for lack of memory (``docs/performance.md``, row 1, has the
measurements). A build also runs inside pip's build backend and in editors, where exhausting
the machine's memory is worse than an error. So a program file is refused, as a program error
that says how to split it, when

- its size is above :data:`MAX_PROGRAM_BYTES`, checked on the open file before a byte is read;
- it holds more than :data:`MAX_PROGRAM_SEPARATORS` newlines, ``;`` and ``,``, counted on its
  bytes before they are parsed. Every statement ends at a newline or a ``;`` and the items of a
  call, a tuple or a list are separated by ``,``, so this bounds what the parser builds (and
  everything after it) however densely the text is written, where bytes alone do not: a file
  of ``y=x;`` packs eight times the statements of the same bytes written one per line.

Both are far above what a package needs: the largest generated benchmark program is well within them
(``docs/performance.md``), and real programs are thousands of lines. A program that does grow past
them can be split: each file a build names (``[tool.pypto].programs``, the command line's paths) is
parsed on its own, and a ``@pl.program`` class is self-contained.
"""

from __future__ import annotations

from pypto_build.lowering.diagnostics import ProgramError, Span

#: The largest program file, in bytes (32 MiB).
MAX_PROGRAM_BYTES = 32 * 1024 * 1024
#: The most newlines, ``;`` and ``,`` one program file may hold.
MAX_PROGRAM_SEPARATORS = 2_000_000

_SPLIT = "split its @pl.program classes over several program files (each file is parsed on its own)"


def check_program_size(filename: str, size: int) -> None:
    """Refuse a program file of ``size`` bytes above :data:`MAX_PROGRAM_BYTES`."""
    if size > MAX_PROGRAM_BYTES:
        raise ProgramError(
            f"program file is {size:,} bytes, above the limit of {MAX_PROGRAM_BYTES:,} bytes "
            f"({MAX_PROGRAM_BYTES // (1024 * 1024)} MiB) that a build reads: {_SPLIT}",
            Span(filename, 0, 0),
        )


def check_program_density(filename: str, text: str) -> None:
    """Refuse program text of more than :data:`MAX_PROGRAM_SEPARATORS` separators (three
    scans of the text in C, a few milliseconds per megabyte: a fraction of the parse they
    spare)."""
    separators = text.count("\n") + text.count(";") + text.count(",")
    if separators > MAX_PROGRAM_SEPARATORS:
        raise ProgramError(
            f"program file holds {separators:,} statements and items (newlines, ';' and ','), "
            f"above the limit of {MAX_PROGRAM_SEPARATORS:,} that a build parses: {_SPLIT}",
            Span(filename, 0, 0),
        )
