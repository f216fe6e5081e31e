"""Diagnostics for program errors and internal invariant failures.

A program error is the user's fault and must point at the offending source: it carries a
:class:`Span` (file, line, column), the message and the phase (front end or pass name) that
raised it. An internal error means *this tool* broke an invariant; it is a different type so
that tests and users can tell "fix your program" from "file a bug".
"""

from __future__ import annotations

from dataclasses import dataclass

from pypto_build.errors import PyptoError
from pypto_build.files import read_regular
from pypto_build.lowering.fast_init import fast_init


@fast_init
@dataclass(frozen=True)
class Span:
    """A source position: 1-based line, 0-based column (as :mod:`ast` reports them). Line 0
    stands for the whole file (a file refused before it is parsed), shown as its path alone."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col + 1}"


#: Span used for IR built by passes, not written by the user.
SYNTHETIC = Span("<synthesized>", 0, 0)


class ProgramError(PyptoError):
    """An error in the user's program, located at ``span`` and raised by ``phase``."""

    def __init__(self, message: str, span: Span, phase: str = "frontend") -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.phase = phase

    def __str__(self) -> str:
        return f"{self.span}: error: {self.message}"

    def render(self) -> str:
        """Format like a compiler: ``path:line:col: error: msg``, the source line and a caret."""
        lines = [f"{self.span}: error: {self.message} [{self.phase}]"]
        source_line = _source_line(self.span)
        if source_line is not None:
            lines.append(source_line)
            lines.append(" " * self.span.col + "^")
        return "\n".join(lines)

    def report(self, prog: str) -> str:
        """The diagnostic as it stands: it names its own place, as a compiler's does, rather
        than the command that found it."""
        return self.render()


class InternalError(Exception):
    """An invariant of pypto-build itself was violated: a bug in this tool, not in the program."""

    def __str__(self) -> str:
        return f"internal error (a bug in pypto-build, please report it): {self.args[0]}"


def _source_line(span: Span) -> str | None:
    if span.line <= 0:
        return None
    try:
        text = read_regular(span.file).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if span.line > len(lines):
        return None
    return lines[span.line - 1].expandtabs(1)
