"""The one error every DSL op raises when Python code calls it.

Program files are read by pypto-build's static front end and never executed, so an op call at
runtime means someone imported a program module and ran a function body. Failing loudly, with
the way out, beats silently returning a fake value that would look like a result.
"""

from __future__ import annotations

from pypto_build.errors import PyptoUsageError


class CompiledOnlyError(PyptoUsageError, RuntimeError):
    """A DSL op called from Python rather than compiled."""


def compiled_only(op_name: str) -> CompiledOnlyError:
    """The error for calling ``op_name`` (its DSL spelling, e.g. ``pl.tensor.slice``)."""
    return CompiledOnlyError(
        "PyPTO programs are compiled by pypto-build, not executed; "
        f"{op_name} has no Python implementation. Build the model package, or run "
        "`pypto-build lower <program file>` to see what the program compiles to."
    )
