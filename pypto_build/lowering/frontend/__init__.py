"""The static front end: PyPTO program files -> IR programs, without running them.

Program files are parsed with :mod:`ast`, never imported or executed: building a wheel must not
run the model's code, and a parse is a pure function of the file's text. Every mistake in a
program is a :class:`~pypto_build.lowering.diagnostics.ProgramError` located in the file (as the
caller named it), never a Python traceback.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import warnings

from pypto_build.files import open_regular
from pypto_build.gc_pause import pauses_collector
from pypto_build.lowering.diagnostics import ProgramError, Span
from pypto_build.lowering.frontend.program import parse_module
from pypto_build.lowering.frontend.source import Source
from pypto_build.lowering.ir import Program
from pypto_build.lowering.limits import (
    MAX_PROGRAM_BYTES,
    check_program_density,
    check_program_size,
)

__all__ = ["parse_file", "parse_source"]


def parse_file(path: str | os.PathLike[str]) -> tuple[Program, ...]:
    """Every ``@pl.program`` class of the file at ``path``, in source order; a file above the
    size limit (:mod:`pypto_build.lowering.limits`) is refused before it is read."""
    filename = os.fspath(path)
    try:
        with open_regular(filename) as stream:
            check_program_size(filename, os.fstat(stream.fileno()).st_size)
            # At most one byte past the limit, so a file still growing cannot slip past it.
            data = stream.read(MAX_PROGRAM_BYTES + 1)
        check_program_size(filename, len(data))
    except OSError as exc:
        raise ProgramError(
            f"cannot read program file: {exc.strerror}", Span(filename, 1, 0)
        ) from exc
    try:
        # Honours a PEP 263 coding cookie and normalises newlines, as the interpreter would.
        source = importlib.util.decode_source(data)
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise ProgramError(f"cannot decode program file: {exc}", Span(filename, 1, 0)) from exc
    return parse_source(source, filename)


@pauses_collector
def parse_source(source: str, filename: str) -> tuple[Program, ...]:
    """Every ``@pl.program`` class of ``source`` in source order; spans name ``filename``.
    Text denser than the limit (:mod:`pypto_build.lowering.limits`) is refused before it is
    parsed."""
    check_program_density(filename, source)
    try:
        return parse_module(_parse_python(source, filename), Source.of(filename, source))
    except RecursionError as exc:
        # Python's own parser and the recursive converters share this limit.
        raise ProgramError("program is nested too deeply to parse", Span(filename, 1, 0)) from exc


def _parse_python(source: str, filename: str) -> ast.Module:
    try:
        # Python's own warnings about the text (an invalid escape sequence) are not diagnostics
        # of the program model and must not reach the user as interpreter noise.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source, filename=filename)
    except MemoryError as exc:  # the parser's own stack, before Python's recursion limit
        raise ProgramError("program is nested too deeply to parse", Span(filename, 1, 0)) from exc
    except SyntaxError as exc:
        span = Span(filename, exc.lineno or 1, max((exc.offset or 1) - 1, 0))
        raise ProgramError(f"invalid syntax: {exc.msg}", span) from exc
    except ValueError as exc:  # "source code string cannot contain null bytes" on some versions
        raise ProgramError(f"invalid source: {exc}", Span(filename, 1, 0)) from exc
