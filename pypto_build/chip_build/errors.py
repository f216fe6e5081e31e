"""Failures of a render that are not the program's: they name the input at fault."""

from __future__ import annotations


class RenderError(Exception):
    """A render that cannot proceed for a reason outside the programs (an input outside the
    source root, an output directory that is not a render tree, a builtin package whose
    templates do not render)."""
