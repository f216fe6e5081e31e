"""The program file being parsed: turns AST positions into spans and diagnostics.

Every user error of the front end is raised through :meth:`Source.error` so that it carries the
file name exactly as the caller gave it and the position of the most precise offending node.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property
from typing import NoReturn

from pypto_build.lowering.diagnostics import ProgramError, Span

#: AST nodes that carry a source position.
Located = ast.expr | ast.stmt | ast.arg | ast.keyword | ast.alias


@dataclass(frozen=True)
class Source:
    filename: str
    #: The file's lines, to turn :mod:`ast`'s UTF-8 byte columns into character columns.
    lines: tuple[str, ...] = ()

    @classmethod
    def of(cls, filename: str, text: str) -> Source:
        return cls(filename, tuple(text.splitlines()))

    def span(self, node: Located) -> Span:
        line = node.lineno
        if 0 < line <= len(self.lines) and self._ascii_lines[line - 1]:
            return Span(self.filename, line, node.col_offset)
        return Span(self.filename, line, self.column(line, node.col_offset))

    def segment(self, node: Located) -> str | None:
        """The text of ``node`` when it is written on one ASCII line (else None)."""
        line = node.lineno
        if node.end_lineno != line or not (0 < line <= len(self.lines)):
            return None
        if not self._ascii_lines[line - 1] or node.end_col_offset is None:
            return None
        return self.lines[line - 1][node.col_offset : node.end_col_offset]

    @cached_property
    def _ascii_lines(self) -> tuple[bool, ...]:
        """Whether each line is ASCII, where byte and character columns agree: every node of
        a file gets a span, and most lines of most files need no conversion."""
        return tuple(line.isascii() for line in self.lines)

    def column(self, line: int, byte_offset: int) -> int:
        """The character column of ``byte_offset`` in ``line`` (1-based): :mod:`ast` counts
        UTF-8 bytes, and a caret under non-ASCII text must count characters."""
        if not 0 < line <= len(self.lines):
            return byte_offset
        prefix = self.lines[line - 1].encode("utf-8")[:byte_offset]
        return len(prefix.decode("utf-8", errors="ignore"))

    def error(self, node: Located, message: str) -> NoReturn:
        raise ProgramError(message, self.span(node), phase="frontend")


def text(node: ast.AST) -> str:
    """The node as the user wrote it (normalised), for quoting in messages."""
    return ast.unparse(node)


def keyword_name(keyword: ast.keyword) -> str:
    """The keyword's name, or ``**value`` for a dict unpacking."""
    return keyword.arg if keyword.arg is not None else "**" + text(keyword.value)
