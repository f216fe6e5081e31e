"""Failures of a render that are not the program's: they name the input at fault."""

from __future__ import annotations

from pathlib import Path

from pypto_build.errors import PyptoError, PyptoUsageError


class RenderError(PyptoUsageError):
    """A render that cannot proceed for a reason outside the programs (an input outside the
    source root, an output directory that is not a render tree, a builtin package whose
    templates do not render)."""


class NoCommonChip(RenderError):
    """No chip supports every builtin the programs use, so none can be targeted by default: a
    front end that can name chips says how (``--chip``)."""


class NoPrograms(PyptoError):
    """A program file of the build defines no ``@pl.program`` class: a mistake in the input
    (reported like a program error), not a render that could not proceed."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} defines no @pl.program class")
        self.path = path
