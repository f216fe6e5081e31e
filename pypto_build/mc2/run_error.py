"""The host API's own error: a misuse that no check of the op covers.

A violated rule of the op is :class:`~pypto_build.lowering.aclnn.rules.Mc2Error`, carrying the
aclnn status (161001 or 161002) its check returns, and an argument of a type the API cannot take
an :class:`~pypto_build.mc2.arguments.ArgumentError`. The API refuses other things aclnn leaves
to the caller -- a read-only ``out``, a workspace smaller than the first stage said, a stream of
another world, an executor run twice, a world the simulator cannot run -- with
:class:`RunError`, which claims no aclnn status: aclnn's documentation gives none for them.
"""

from __future__ import annotations

from pypto_build.errors import PyptoUsageError


class RunError(PyptoUsageError, ValueError):
    """A misuse of :func:`~pypto_build.mc2.run`, of the first stage's ``out`` or of a
    simulated world."""


class NoSuchRank(RunError, IndexError):
    """A rank outside a simulated world: an ``IndexError`` too, as a sequence's index is."""
