"""The host API's own error: a misuse of the second stage.

A violated rule of the op is :class:`~pypto_build.lowering.mc2.rules.Mc2Error`, carrying the
aclnn status (161001 or 161002) its check returns. :func:`~pypto_build.mc2.run` refuses other
things aclnn leaves to the caller -- a workspace smaller than the first stage said, a stream of
another world, an executor run twice -- with :class:`RunError`, which claims no aclnn status:
aclnn's documentation gives none for them.
"""

from __future__ import annotations

from pypto_build.errors import PyptoUsageError


class RunError(PyptoUsageError, ValueError):
    """A misuse of :func:`~pypto_build.mc2.run` or of a simulated world's streams."""
